import { HubError } from '../core/errors';
import type { ExtensionContext, HubExtension } from '../extensions/extension';
import { createHub, type SpeakerHub } from '../hub';
import type { Logger } from '../logger';
import { OPERATIONS_BY_NAME } from '../operations/table';
import { EventFanout, HubUnreachableError, type HubConnection, type HubWireEvent } from './connection';
import { embeddedHubConfig } from './embedded-config';

/** Events queued for the nodes before the subscription is dropped (and renewed) as too slow. */
const MAX_QUEUED_EVENTS = 1000;

/** The Node-RED front end as a hub extension: it keeps the context the hub hands it. */
class NodeRedExtension implements HubExtension {
  readonly name = 'node-red';
  ctx?: ExtensionContext;
  async start(ctx: ExtensionContext): Promise<void> {
    this.ctx = ctx;
  }
  async stop(): Promise<void> {
    this.ctx = undefined;
  }
}

export interface EmbeddedOptions {
  settings: Record<string, unknown>;
  credentials: Record<string, string | undefined>;
  userDir?: string;
  nodeId: string;
  logger: Logger;
}

/** Builds (and starts) a hub inside Node-RED; a bad setting throws at once with the key's name. */
export function createEmbeddedConnection(options: EmbeddedOptions): HubConnection {
  const ext = new NodeRedExtension();
  const hub = createHub(embeddedHubConfig(options.settings, options.credentials, { userDir: options.userDir, nodeId: options.nodeId }), {
    logger: options.logger,
    extensions: [ext],
  });
  return new EmbeddedConnection(hub, ext, options.logger);
}

/**
 * A hub run by the config node. Operations go through the extension context's dispatch
 * (the same lookup, validation and typed errors as REST) with a trusted session, which
 * never expires; should it be closed (a close_session node), a new one is opened.
 */
class EmbeddedConnection implements HubConnection {
  readonly mode = 'embedded' as const;
  readonly ready: Promise<void>;
  private session?: string;
  private started = false;
  private closing?: Promise<void>;
  private subscription?: { close(): void };
  private readonly fanout: EventFanout;

  constructor(
    private readonly hub: SpeakerHub,
    private readonly ext: NodeRedExtension,
    private readonly logger: Logger,
  ) {
    this.ready = hub.start().then(
      () => {
        this.started = true;
        this.session = this.context().openTrustedSession();
        if (this.fanout.size) this.openSubscription();
      },
      (e: unknown) => {
        throw new HubUnreachableError(`The embedded hub did not start: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
      },
    );
    this.ready.catch(() => undefined);
    this.fanout = new EventFanout(
      () => {
        if (this.started) this.openSubscription();
      },
      () => {
        this.subscription?.close();
        this.subscription = undefined;
      },
      (e) => logger.error({ err: String(e) }, 'a node failed handling a hub event'),
    );
  }

  private context(): ExtensionContext {
    if (!this.ext.ctx || this.closing) throw new HubUnreachableError('The embedded hub is stopped.');
    return this.ext.ctx;
  }

  async run(operation: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    await this.ready;
    const needsSession = OPERATIONS_BY_NAME.get(operation)?.needsSession ?? true;
    let result = await this.context().dispatch(operation, needsSession ? { ...params, SessionToken: this.session } : params);
    if (!result.ok && result.error.code === 'SessionNotFound' && needsSession) {
      this.session = this.context().openTrustedSession();
      result = await this.context().dispatch(operation, { ...params, SessionToken: this.session });
    }
    if (result.ok) return result.body;
    throw result.error instanceof HubError ? result.error : new HubError('InternalError', String(result.error));
  }

  subscribe(handler: (event: HubWireEvent) => void): () => void {
    return this.fanout.add(handler);
  }

  private openSubscription(): void {
    if (this.subscription || this.closing) return;
    this.subscription = this.context().subscribe((e) => this.fanout.emit(e as HubWireEvent), {
      maxQueued: MAX_QUEUED_EVENTS,
      initial: true,
      onOverflow: () => {
        // The nodes fell behind; they lose the backlog but keep following from now on.
        this.logger.warn({ maxQueued: MAX_QUEUED_EVENTS }, 'Node-RED nodes fell behind the hub events; dropped the backlog');
        this.subscription = undefined;
        if (this.fanout.size) setImmediate(() => this.openSubscription());
      },
    });
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.ready.catch(() => undefined);
      this.subscription?.close();
      this.subscription = undefined;
      if (this.started) {
        const ctx = this.ext.ctx;
        if (ctx && this.session) await ctx.dispatch('close_session', { SessionToken: this.session });
        await this.hub.stop();
      }
    })();
    return this.closing;
  }
}
