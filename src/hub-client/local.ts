import type { ExtensionContext } from '../extensions/extension';
import type { Logger } from '../logger';
import { HubUnreachableError, ListenerFanout, type HubConnection, type HubListener } from './connection';
import { bodyOf, needsSession, runOperation } from './run';

export interface LocalOptions {
  logger: Logger;
  /** Events queued for the listeners before the subscription counts as stalled (then: resubscribe and resync). */
  maxQueued?: number;
}

const DEFAULT_MAX_QUEUED = 1000;

/**
 * The hub a front end runs in, through its extension context: operations in a trusted
 * session (never expires; should a client close it, a new one is opened), events from the
 * bounded wire-event feed — a listener that falls behind loses the backlog and is told to
 * resync, so it never grows the hub's memory.
 */
export class LocalConnection implements HubConnection {
  readonly mode: 'local' | 'embedded' = 'local';
  readonly ready: Promise<void> = Promise.resolve();
  private session?: string;
  private closed = false;
  private subscription?: { close(): void };
  private readonly fanout: ListenerFanout;
  private readonly maxQueued: number;

  constructor(
    private readonly ctx: ExtensionContext,
    private readonly options: LocalOptions,
  ) {
    this.maxQueued = options.maxQueued ?? DEFAULT_MAX_QUEUED;
    this.fanout = new ListenerFanout(
      () => this.subscribe(),
      () => {
        this.subscription?.close();
        this.subscription = undefined;
      },
      (e) => options.logger.error({ err: String(e) }, 'a front end failed handling a hub event'),
    );
  }

  /** The trusted session's token, opened on first use (a bridge that passes it on to its own clients). */
  sessionToken(): string {
    if (this.closed) throw new HubUnreachableError('The hub connection is closed.');
    this.session ??= this.ctx.openTrustedSession();
    return this.session;
  }

  async run(operation: string, given: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    // Wire form, as a remote hub receives it: lists comma-joined (DeviceIDList).
    const params = Object.fromEntries(Object.entries(given).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : v]));
    if (!needsSession(operation)) return bodyOf(await runOperation(this.ctx, operation, params));
    let result = await runOperation(this.ctx, operation, { ...params, SessionToken: this.sessionToken() });
    if (!result.ok && result.error.code === 'SessionNotFound') {
      // A trusted session never expires; only a close_session by a client ends it.
      this.session = undefined;
      result = await runOperation(this.ctx, operation, { ...params, SessionToken: this.sessionToken() });
    }
    return bodyOf(result);
  }

  follow(listener: HubListener): () => void {
    return this.fanout.add(listener);
  }

  private subscribe(): void {
    if (this.subscription || this.closed) return;
    this.subscription = this.ctx.subscribe((e) => this.fanout.event(e), {
      maxQueued: this.maxQueued,
      initial: true,
      onOverflow: () => {
        this.options.logger.warn({ maxQueued: this.maxQueued }, 'a front end fell behind the hub events; dropped the backlog, resyncing');
        this.subscription = undefined;
        // subscribe() asks the listeners to resync once the new subscription is in place.
        if (this.fanout.size) this.subscribe();
      },
    });
    // The feed delivers the current playback first (initial): listeners also read the rest now.
    setImmediate(() => this.fanout.resync());
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.subscription?.close();
    this.subscription = undefined;
    const token = this.session;
    this.session = undefined;
    if (token) await this.ctx.dispatch('close_session', { SessionToken: token }).catch(() => undefined);
  }
}
