import { HubError } from '../core/errors';
import { createHub, type SpeakerHub } from '../hub';
import type { HubConfigInput } from '../hub-config';
import type { Logger } from '../logger';
import type { HubConnection, HubListener, OperationParams } from './hub-connection';
import type { ExtensionContext, HubExtension } from '../extensions/extension';

/** Events queued for HomeKit before the subscription counts as overflowing (then: resync). */
const MAX_QUEUED_EVENTS = 10_000;

/**
 * The hub inside the Homebridge process. The plugin is one of its extensions: it reaches the
 * core only through the extension context (dispatch, a trusted session, the wire events).
 */
export class EmbeddedConnection implements HubConnection {
  readonly mode = 'embedded';
  private hub?: SpeakerHub;
  private ctx?: ExtensionContext;
  private session = '';
  private subscription?: { close(): void };

  constructor(
    private readonly config: HubConfigInput,
    private readonly logger: Logger,
  ) {}

  /** The running hub (its REST URL, token), for logging at start. */
  get runningHub(): SpeakerHub | undefined {
    return this.hub;
  }

  async start(listener: HubListener): Promise<void> {
    const extension: HubExtension = {
      name: 'homekit',
      start: async (ctx) => {
        this.ctx = ctx;
        this.session = ctx.openTrustedSession();
        this.follow(listener);
      },
      stop: async () => {
        this.subscription?.close();
        this.subscription = undefined;
      },
    };
    this.hub = createHub(this.config, { logger: this.logger, extensions: [extension] });
    await this.hub.start();
  }

  private follow(listener: HubListener): void {
    this.subscription = this.ctx!.subscribe((e) => listener.event(e), {
      maxQueued: MAX_QUEUED_EVENTS,
      initial: true,
      onOverflow: () => {
        // HomeKit fell behind a burst of events: start afresh from the full state.
        this.follow(listener);
        listener.resync();
      },
    });
  }

  async call(operation: string, params: OperationParams = {}): Promise<Record<string, unknown>> {
    if (!this.ctx) throw new HubError('DeviceUnavailable', 'The hub is not running.');
    const wire: Record<string, unknown> = { SessionToken: this.session };
    for (const [k, v] of Object.entries(params)) wire[k] = Array.isArray(v) ? v.join(',') : String(v);
    let r = await this.ctx.dispatch(operation, wire);
    if (!r.ok && r.error.code === 'SessionNotFound') {
      // A trusted session never expires; this only guards against a hub that forgot it.
      this.session = wire.SessionToken = this.ctx.openTrustedSession();
      r = await this.ctx.dispatch(operation, wire);
    }
    if (!r.ok) throw r.error;
    return r.body;
  }

  async stop(): Promise<void> {
    const hub = this.hub;
    const ctx = this.ctx;
    this.hub = undefined;
    this.ctx = undefined;
    if (ctx && this.session) await ctx.dispatch('close_session', { SessionToken: this.session });
    await hub?.stop();
  }
}
