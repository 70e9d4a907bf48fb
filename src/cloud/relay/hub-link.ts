import type { WebSocket } from 'ws';
import { HubError, ERROR_CODES, type ErrorCode } from '../../core/errors';
import { CLOSE_AUTH_FAILED, CLOSE_LINK_LIMIT, CLOSE_REPLACED, parseHubToCloud, type LinkRequest } from '../../protocols/cloud-link';

/** Requests one hub may have in flight; more get HubBusy instead of queueing without bound. */
export const MAX_IN_FLIGHT = 256;
/** Beyond this much unsent data the link is congested: refuse rather than buffer. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

/** What a hub answered (or why it could not). */
export type LinkResult = { ok: true; body: Record<string, unknown> } | { ok: false; error: HubError };

/** Numbers links within this process: with the instance id, a link's name in the cluster's hub lists. */
let linkSeq = 0;

interface Pending {
  resolve(r: LinkResult): void;
  timer: NodeJS.Timeout;
}

/** The cloud's end of one connected hub's link. */
export class BrokerLink {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  uuid = '';
  alive = true;
  readonly connectedAt = Date.now();
  readonly seq = ++linkSeq;
  /** Told once the hub said who it is (its uuid), for lists kept elsewhere (the cluster's). */
  onHello?: () => void;

  constructor(
    readonly userId: string,
    readonly ws: WebSocket,
    private readonly timeoutMs: number,
    /** The digest of the link token it opened with (revoking that token closes it). */
    readonly tokenDigest = '',
  ) {
    ws.on('message', (data) => this.onMessage(String(data)));
    ws.on('pong', () => {
      this.alive = true;
      this.lastPong = Date.now();
    });
  }

  /** Runs an operation on the hub; always resolves (HubOffline/HubBusy/HubTimeout on link trouble). */
  request(op: string, params: Record<string, string>, timeoutMs = this.timeoutMs): Promise<LinkResult> {
    if (this.pending.size >= MAX_IN_FLIGHT || this.ws.bufferedAmount > MAX_BUFFERED_BYTES) {
      return Promise.resolve({ ok: false, error: new HubError('HubBusy', `Your hub has ${this.pending.size} requests in flight; retry shortly.`) });
    }
    const id = this.nextId++;
    const msg: LinkRequest = { t: 'req', id, op, params };
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve({ ok: false, error: new HubError('HubTimeout', `Your hub did not answer within ${Math.round(timeoutMs / 1000)} s.`) });
      }, timeoutMs);
      this.pending.set(id, { resolve, timer });
      this.ws.send(JSON.stringify(msg), (err) => {
        if (err) this.settle(id, { ok: false, error: new HubError('HubOffline', 'The link to your hub failed while sending the request.') });
      });
    });
  }

  /** This link failed a liveness ping and a newer link of the account takes its place. */
  replaced(): void {
    this.ws.close(CLOSE_REPLACED, 'replaced by a newer link of the same account');
    // It did not answer a ping: a close handshake would wait for it in vain.
    this.ws.terminate();
  }

  /** Its link token was revoked (the owner signed in with --revoke-other-links). */
  revoked(): void {
    this.ws.close(CLOSE_AUTH_FAILED, 'the link token was revoked');
  }

  /** The account holds its maximum of live links: this newer one is refused. */
  refused(): void {
    this.ws.close(CLOSE_LINK_LIMIT, 'the account holds its maximum of live hub links');
  }

  private probing?: Promise<boolean>;
  private lastPong = 0;

  /**
   * Whether the hub answers a ping within `ms` (any pong counts, the heartbeat's too). Probes
   * asked for while one is out share it.
   */
  probe(ms: number): Promise<boolean> {
    // A pong this recent answers for it: newcomers in a row cost the hub at most one ping per `ms`.
    if (Date.now() - this.lastPong < ms) return Promise.resolve(true);
    if (this.probing) return this.probing;
    const p = new Promise<boolean>((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.ws.off('pong', onPong);
        this.ws.off('close', onClose);
        this.probing = undefined;
        resolve(ok);
      };
      const onPong = () => done(true);
      const onClose = () => done(false);
      const timer = setTimeout(() => done(false), ms);
      this.ws.on('pong', onPong);
      this.ws.on('close', onClose);
      try {
        this.ws.ping();
      } catch {
        done(false);
      }
    });
    this.probing = p;
    return p;
  }

  /** The link went away: every request in flight fails now (it may or may not have run). */
  failAll(): void {
    for (const id of [...this.pending.keys()]) {
      this.settle(id, {
        ok: false,
        error: new HubError('HubOffline', 'The link to your hub dropped while the request was in flight; it may or may not have been carried out.'),
      });
    }
  }

  get inFlight(): number {
    return this.pending.size;
  }

  private onMessage(text: string): void {
    const msg = parseHubToCloud(text);
    if (!msg) return; // not a frame of the protocol: dropped
    if (msg.t === 'hello') {
      this.uuid = msg.uuid;
      this.onHello?.();
      return;
    }
    if (msg.ok) {
      this.settle(msg.id, { ok: true, body: msg.body });
    } else {
      const code = (msg.error.code in ERROR_CODES ? msg.error.code : 'InternalError') as ErrorCode;
      this.settle(msg.id, { ok: false, error: new HubError(code, msg.error.message, { parameter: msg.error.parameter }) });
    }
  }

  private settle(id: number, r: LinkResult): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    p.resolve(r);
  }
}
