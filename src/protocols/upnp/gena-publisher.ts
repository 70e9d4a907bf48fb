import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { isIP } from 'node:net';
import type { Logger } from '../../logger';
import { LimitedLog } from '../../logging/limited-log';
import { settleOnce } from '../../util/settle-once';
import { GENA_NT, GENA_NTS, headerValue, propertySetDocument, timeoutHeader, timeoutSeconds } from './gena';

/**
 * GENA as a publisher (the DLNA renderers and MediaServer; the messages: gena.ts):
 * SUBSCRIBE/RENEW/UNSUBSCRIBE and NOTIFY delivery.
 *
 * What keeps it safe on a LAN: a subscription's events go only to its subscriber's own
 * address (a CALLBACK naming another host is refused, so the hub cannot be made to send to a
 * third party); subscriptions are bounded per service and in all (beyond: 503), and expire;
 * each subscriber gets its events in order through a short queue, one request at a time with a
 * short deadline, and is dropped when its first event cannot be delivered, after repeated
 * failures later, or when its queue overflows.
 */

export interface GenaLimits {
  maxPerService: number;
  maxTotal: number;
  /** One address's subscriptions per service and in all (so one host never holds every slot). */
  maxPerAddressPerService?: number;
  maxPerAddress?: number;
  maxSeconds: number;
}

export interface GenaAnswer {
  status: number;
  headers: Record<string, string>;
}

interface Subscription {
  sid: string;
  /** The subscriber's address (the per-address caps count by it). */
  source: string;
  /** "<renderer slug>/<service>". */
  key: string;
  callback: URL;
  expiresAt: number;
  seq: number;
  /** Bodies to send, each with what to call once it is delivered (or given up on). */
  queue: { body: string; done: () => void }[];
  sending: boolean;
  failures: number;
  /** The initial event is queued: until then changes are left out (the initial one carries them). */
  started: boolean;
  /** An event reached the subscriber once: until then, one failed delivery ends the subscription. */
  reached: boolean;
  /**
   * The subscriber read the last NOTIFY and never answered it (upnp-device-client, and the
   * control points built on it, do that): its next ones count as delivered once written, after
   * SILENT_GRACE_MS, not after ANSWER_WAIT_MS each — a Stop that waits for its STOPPED event
   * would otherwise take a second or more per event queued before it.
   */
  silent: boolean;
}

const MIN_SECONDS = 60;
const DEFAULT_SECONDS = 1800;
const SEND_TIMEOUT_MS = 2000;
const ANSWER_WAIT_MS = 1000;
/** Time for a subscriber that never answers to read a NOTIFY written to it. */
const SILENT_GRACE_MS = 30;
/** The initial event waits this long after the SUBSCRIBE answer, so the subscriber knows its SID when it arrives. */
const INITIAL_DELAY_MS = 100;
const MAX_FAILURES = 3;
const MAX_QUEUE = 32;
const SWEEP_MS = 30_000;

export class Gena {
  private readonly subs = new Map<string, Subscription>();
  private readonly byKey = new Map<string, Set<Subscription>>();
  private readonly perAddress = new Map<string, number>();
  private readonly sweep: NodeJS.Timeout;
  private readonly dropped: LimitedLog;
  private closed = false;

  constructor(
    private readonly limits: GenaLimits,
    private readonly log: Logger,
    /** The interface address NOTIFYs leave from. */
    private readonly localAddress: string,
    private readonly serverHeader: string,
  ) {
    this.sweep = setInterval(() => this.expire(), SWEEP_MS);
    this.sweep.unref();
    this.dropped = new LimitedLog(log, 'DLNA: GENA subscriber dropped');
  }

  get size(): number {
    return this.subs.size;
  }

  /**
   * Handles SUBSCRIBE (new or renewal) and UNSUBSCRIBE for one service; `initial` gives the
   * full state sent to a new subscriber (event 0) once it has its answer.
   */
  handle(method: string, key: string, headers: Record<string, string | string[] | undefined>, source: string, initial: () => string): GenaAnswer {
    const h = (n: string) => headerValue(headers[n])?.trim();
    const sid = h('sid');
    if (method === 'UNSUBSCRIBE') {
      if (!sid || h('callback') || h('nt')) return { status: sid ? 400 : 412, headers: {} };
      const s = this.subs.get(sid);
      if (!s || s.key !== key) return { status: 412, headers: {} };
      this.remove(s);
      return { status: 200, headers: {} };
    }
    const seconds = this.timeout(h('timeout'));
    if (sid) {
      if (h('callback') || h('nt')) return { status: 400, headers: {} };
      const s = this.subs.get(sid);
      if (!s || s.key !== key) return { status: 412, headers: {} };
      s.expiresAt = Date.now() + seconds * 1000;
      return { status: 200, headers: this.answerHeaders(s.sid, seconds) };
    }
    if (h('nt') !== GENA_NT) return { status: 412, headers: {} };
    const callback = this.callbackOf(h('callback'), source);
    if (!callback) return { status: 412, headers: {} };
    this.expire();
    const set = this.byKey.get(key);
    const from = source.replace(/^::ffff:/, '');
    const reason = this.overLimit(set, from);
    if (reason) {
      this.dropped.warn({ key, source: from, total: this.subs.size, reason });
      return { status: 503, headers: {} };
    }
    const s: Subscription = {
      sid: `uuid:${uuidFromBytes(randomBytes(16))}`,
      source: from,
      key,
      callback,
      expiresAt: Date.now() + seconds * 1000,
      seq: 0,
      queue: [],
      sending: false,
      failures: 0,
      started: false,
      reached: false,
      silent: false,
    };
    this.subs.set(s.sid, s);
    this.perAddress.set(from, (this.perAddress.get(from) ?? 0) + 1);
    if (set) set.add(s);
    else this.byKey.set(key, new Set([s]));
    // UDA: the initial event follows the SUBSCRIBE answer.
    setTimeout(() => {
      if (!this.subs.has(s.sid)) return;
      s.started = true;
      this.enqueue(s, initial());
    }, INITIAL_DELAY_MS).unref();
    return { status: 200, headers: this.answerHeaders(s.sid, seconds) };
  }

  /**
   * Sends a property set to every subscriber of one service; resolves once each has it (or was
   * given up on), so an action can answer after its state change reached the control points.
   */
  publish(key: string, body: string): Promise<void> {
    const set = this.byKey.get(key);
    if (!set) return Promise.resolve();
    const sent: Promise<void>[] = [];
    for (const s of set) if (s.started) sent.push(this.enqueue(s, body));
    return Promise.all(sent).then(() => undefined);
  }

  /** Ends the subscriptions of a renderer that left. */
  dropKey(prefix: string): void {
    for (const s of [...this.subs.values()]) if (s.key.startsWith(`${prefix}/`)) this.remove(s);
  }

  close(): void {
    this.closed = true;
    clearInterval(this.sweep);
    for (const sub of this.subs.values()) for (const item of sub.queue) item.done();
    this.subs.clear();
    this.byKey.clear();
    this.perAddress.clear();
  }

  private answerHeaders(sid: string, seconds: number): Record<string, string> {
    return { SID: sid, TIMEOUT: timeoutHeader(seconds), SERVER: this.serverHeader, 'CONTENT-LENGTH': '0' };
  }

  private timeout(value: string | undefined): number {
    const asked = timeoutSeconds(value) ?? DEFAULT_SECONDS;
    return Math.max(MIN_SECONDS, Math.min(this.limits.maxSeconds, asked));
  }

  /** The first http URL of CALLBACK whose host is the subscriber's own address; undefined otherwise. */
  private callbackOf(value: string | undefined, source: string): URL | undefined {
    if (!value || value.length > 1024) return undefined;
    const own = source.replace(/^::ffff:/, '');
    for (const m of value.matchAll(/<([^>]*)>/g)) {
      let u: URL;
      try {
        u = new URL(m[1]);
      } catch {
        continue;
      }
      const host = u.hostname.replace(/^\[|\]$/g, '');
      if (u.protocol === 'http:' && isIP(host) && host === own) return u;
    }
    this.dropped.warn({ source, reason: 'callback is not the subscriber’s own address' });
    return undefined;
  }

  private expire(): void {
    const now = Date.now();
    for (const s of [...this.subs.values()]) if (s.expiresAt <= now) this.remove(s);
  }

  /** Which limit a new subscription from that address would pass, if any (issue 32 item 10). */
  private overLimit(set: Set<Subscription> | undefined, from: string): string | undefined {
    if (this.subs.size >= this.limits.maxTotal) return 'limit';
    if ((set?.size ?? 0) >= this.limits.maxPerService) return 'limit per service';
    if ((this.perAddress.get(from) ?? 0) >= (this.limits.maxPerAddress ?? Infinity)) return 'limit per address';
    let mine = 0;
    for (const x of set ?? []) if (x.source === from) mine++;
    if (mine >= (this.limits.maxPerAddressPerService ?? Infinity)) return 'limit per address and service';
    return undefined;
  }

  private remove(s: Subscription): void {
    if (!this.subs.delete(s.sid)) return;
    const n = (this.perAddress.get(s.source) ?? 1) - 1;
    if (n <= 0) this.perAddress.delete(s.source);
    else this.perAddress.set(s.source, n);
    const set = this.byKey.get(s.key);
    set?.delete(s);
    if (set && set.size === 0) this.byKey.delete(s.key);
    for (const item of s.queue) item.done();
    s.queue = [];
  }

  private enqueue(s: Subscription, body: string): Promise<void> {
    if (this.closed || !this.subs.has(s.sid)) return Promise.resolve();
    if (s.queue.length >= MAX_QUEUE) {
      this.dropped.warn({ sid: s.sid, callback: s.callback.host, reason: 'queue full' });
      this.remove(s);
      return Promise.resolve();
    }
    const delivered = new Promise<void>((done) => s.queue.push({ body, done }));
    if (!s.sending) void this.drain(s);
    return delivered;
  }

  private async drain(s: Subscription): Promise<void> {
    s.sending = true;
    while (s.queue.length && this.subs.has(s.sid) && !this.closed) {
      const { body, done } = s.queue.shift()!;
      const seq = s.seq;
      // SEQ wraps to 1, never back to 0 (0 is the initial event's).
      s.seq = s.seq >= 0xffffffff ? 1 : s.seq + 1;
      const ok = await this.send(s, seq, body);
      done();
      if (ok) {
        s.failures = 0;
        s.reached = true;
      } else if (!s.reached || ++s.failures >= MAX_FAILURES) {
        this.dropped.warn({ sid: s.sid, callback: s.callback.host, reason: 'no answer' });
        this.remove(s);
      }
    }
    s.sending = false;
  }

  /**
   * One NOTIFY. Failed: no connection, not written within SEND_TIMEOUT_MS, or an error status.
   * Delivered: a 2xx, or — some control points read the event and never answer — the whole
   * request written and no answer within ANSWER_WAIT_MS (the socket is then closed).
   */
  private send(s: Subscription, seq: number, body: string): Promise<boolean> {
    const payload = Buffer.from(propertySetDocument(body));
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: s.callback.hostname,
          port: s.callback.port || 80,
          path: s.callback.pathname + s.callback.search,
          method: 'NOTIFY',
          localAddress: this.localAddress,
          agent: false,
          headers: {
            HOST: s.callback.host,
            'CONTENT-TYPE': 'text/xml; charset="utf-8"',
            'CONTENT-LENGTH': String(payload.length),
            NT: GENA_NT,
            NTS: GENA_NTS,
            SID: s.sid,
            SEQ: String(seq),
            CONNECTION: 'close',
          },
        },
        (res) => {
          res.resume();
          s.silent = false;
          settle.resolve((res.statusCode ?? 500) < 300);
        },
      );
      // Every outcome closes the socket: a subscriber that never answers would otherwise hold it.
      // Nothing here rejects: a failed delivery is `false`.
      const settle = settleOnce<boolean>(
        (ok) => {
          req.destroy();
          resolve(ok);
        },
        reject,
        { ms: SEND_TIMEOUT_MS, value: () => false },
      );
      req.on('finish', () =>
        settle.restart({
          ms: s.silent ? SILENT_GRACE_MS : ANSWER_WAIT_MS,
          value: () => {
            s.silent = true;
            return true;
          },
        }),
      );
      req.on('error', () => settle.resolve(false));
      req.end(payload);
    });
  }
}

export function uuidFromBytes(b: Buffer): string {
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}
