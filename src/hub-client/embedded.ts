import type { ExtensionContext, HubExtension } from '../extensions/extension';
import { createHub, type SpeakerHub } from '../hub';
import type { HubConfigInput } from '../hub-config';
import type { Logger } from '../logger';
import { HubUnreachableError, type HubConnection, type HubListener } from './connection';
import { LocalConnection } from './local';

export interface EmbeddedOptions {
  config: HubConfigInput;
  logger: Logger;
  /** The front end's name in the hub's logs ('node-red', 'homekit'). */
  name: string;
  maxQueued?: number;
}

/**
 * A hub the front end runs itself (Node-RED's and Homebridge's embedded mode). The front end
 * is one of the hub's extensions and reaches the core only through its context, exactly as a
 * front end inside the hub does (LocalConnection).
 */
export class EmbeddedConnection implements HubConnection {
  readonly mode = 'embedded' as const;
  readonly ready: Promise<void>;
  readonly hub: SpeakerHub;
  private local?: LocalConnection;
  private readonly pending: { listener: HubListener; stop?: () => void; cancelled: boolean }[] = [];
  private closing?: Promise<void>;

  constructor(private readonly options: EmbeddedOptions) {
    const extension: HubExtension = {
      name: options.name,
      start: async (ctx: ExtensionContext) => {
        this.local = new LocalConnection(ctx, { logger: options.logger, maxQueued: options.maxQueued });
        for (const p of this.pending) if (!p.cancelled) p.stop = this.local.follow(p.listener);
      },
      stop: async () => {
        await this.local?.close();
        this.local = undefined;
      },
    };
    // A bad setting throws here, at once, with the key's name.
    this.hub = createHub(options.config, { logger: options.logger, extensions: [extension] });
    this.ready = this.hub.start().catch((e: unknown) => {
      throw new HubUnreachableError(`The embedded hub did not start: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    });
    this.ready.catch(() => undefined);
  }

  async run(operation: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    await this.ready;
    if (!this.local || this.closing) throw new HubUnreachableError('The embedded hub is stopped.');
    return this.local.run(operation, params);
  }

  /** Listeners may follow before the hub has started: they are attached when it starts. */
  follow(listener: HubListener): () => void {
    if (this.local) return this.local.follow(listener);
    const p: { listener: HubListener; stop?: () => void; cancelled: boolean } = { listener, cancelled: false };
    this.pending.push(p);
    return () => {
      p.cancelled = true;
      p.stop?.();
    };
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      const started = await this.ready.then(
        () => true,
        () => false,
      );
      if (started) await this.hub.stop();
    })();
    return this.closing;
  }
}
