import { ERROR_CODES, HubError, type ErrorCode } from '../../core/errors';
import type { Logger } from '../../logger';
import type { LinkResult } from '../relay/hub-link';
import { hubOffline, type HubRegistry, type HubRouter } from '../relay/hub-registry';
import type { ClusterBus } from './bus';
import { EVENTS_CHANNEL, instanceChannel, KEY_PREFIX } from './keys';
import type { BusMessage, RelayAnswerMessage, RelayRequestMessage } from './messages';

export interface ClusterRelayOptions {
  /** How long a link's location stays in Redis without renewal (a dead instance's entries expire). */
  leaseMs: number;
  /** How long a relayed request waits for the hub's answer. */
  requestTimeoutMs: number;
  /** A request for a hub that dropped at most recentlyOnlineMs ago waits this long for it to link again (anywhere). */
  reconnectWaitMs: number;
  recentlyOnlineMs: number;
  /** Bound on requests sent to other instances and not yet answered. */
  maxPending: number;
  /** Bound on requests waiting for a hub to link again. */
  maxWaiting: number;
}

/** Where a user's hub is linked: `instance` holds its link (lease), `recent` says it was linked lately. */
interface Location {
  instance: string | null;
  recent: boolean;
}

type Remote = LinkResult | 'gone';

interface PendingRemote {
  resolve(r: Remote): void;
  timer: NodeJS.Timeout;
  target: string;
}

const hubKey = (userId: string) => `${KEY_PREFIX}hub:${userId}`;
const seenKey = (userId: string) => `${KEY_PREFIX}seen:${userId}`;

/**
 * Routes relayed requests across the cluster, as socket.io's Redis adapter routes to the node
 * holding a socket. Each instance keeps, per user with a hub linked to it, a key
 * `hub:<user>` = its instance id with a lease (SET PX, renewed every lease/3); a request
 * arriving at an instance without that hub's link looks the key up and publishes the request
 * on the holder's channel; the holder runs it on the hub and publishes the answer on the
 * requester's channel. Nothing waits without bound: each request carries its time to live,
 * a holder that is gone (PUBLISH reached nobody, or its channel lost its subscriber) answers
 * HubOffline at once, and Redis unreachable means HubOffline for hubs on other instances.
 */
export class ClusterRelay implements HubRouter {
  private nextId = 1;
  private readonly pending = new Map<number, PendingRemote>();
  private readonly waiting = new Map<string, Set<() => void>>();
  private waitingCount = 0;
  private renewTimer?: NodeJS.Timeout;
  private watchTimer?: NodeJS.Timeout;
  private readonly me: string;

  constructor(
    private readonly bus: ClusterBus,
    private readonly registry: HubRegistry,
    private readonly logger: Logger,
    private readonly options: ClusterRelayOptions,
  ) {
    this.me = bus.instanceId;
    bus.onMessage((m) => this.onMessage(m));
    bus.onUp((up) => {
      if (up) void this.renew();
      // Answers cannot come back without Redis: what was sent elsewhere fails now.
      else
        this.failPending(
          () => true,
          'The cloud lost its connection to the cluster while your request was in flight; it may or may not have been carried out.',
        );
    });
    registry.onChange((userId, linked) => void (linked ? this.claim(userId) : this.release(userId)));
    this.renewTimer = setInterval(() => void this.renew(), Math.max(100, Math.floor(options.leaseMs / 3)));
    this.renewTimer.unref();
  }

  async request(userId: string, op: string, params: Record<string, string>): Promise<LinkResult> {
    const deadline = Date.now() + this.options.requestTimeoutMs;
    // A few rounds at most: the hub may move (relink elsewhere) while we look for it.
    for (let round = 0; round < 3; round++) {
      if (this.registry.current(userId)) return this.registry.request(userId, op, params);
      // Without Redis only a hub relinking here can be reached (the registry waits briefly for that).
      if (!this.bus.up) return this.registry.request(userId, op, params).then((r) => (!r.ok && r.error.code === 'HubOffline' ? unreachable() : r));
      let where: Location;
      try {
        where = await this.locate(userId);
      } catch {
        return this.registry.current(userId) ? this.registry.request(userId, op, params) : unreachable();
      }
      if (where.instance && where.instance !== this.me) {
        const r = await this.remote(where.instance, userId, op, params, Math.max(1, deadline - Date.now()));
        if (r !== 'gone') return r;
      } else if (!where.recent && !this.registry.current(userId)) {
        return hubOffline();
      }
      // Its link just dropped (or its instance died): hubs relink within seconds, wait for that.
      const left = Math.min(this.options.reconnectWaitMs, deadline - Date.now());
      if (left <= 0 || !(await this.waitLinked(userId, left))) return hubOffline();
    }
    return hubOffline();
  }

  /** Requests sent elsewhere and not answered yet. */
  get inFlight(): number {
    return this.pending.size;
  }

  close(): void {
    clearInterval(this.renewTimer);
    clearInterval(this.watchTimer);
    this.failPending(() => true, 'The cloud instance is shutting down.');
    for (const set of this.waiting.values()) for (const w of [...set]) w();
  }

  private async locate(userId: string): Promise<Location> {
    const [instance, seen] = await this.bus.redis.mget(hubKey(userId), seenKey(userId));
    return { instance, recent: seen !== null };
  }

  private async claim(userId: string): Promise<void> {
    this.wake(userId);
    try {
      // The newest link wins: requests go to the hub that connected last, as on one instance.
      await this.bus.redis.set(hubKey(userId), this.me, 'PX', this.options.leaseMs);
      await this.bus.publish(EVENTS_CHANNEL, { t: 'linked', userId, instance: this.me });
    } catch (e) {
      // The renewal timer claims it once Redis is back.
      this.logger.debug({ err: (e as Error).message }, 'cluster: claiming a hub link failed');
    }
  }

  private async release(userId: string): Promise<void> {
    try {
      // Give the location up only if it is still ours (a newer link elsewhere keeps its claim).
      await this.bus.batch(true).shReleaseLease(hubKey(userId), this.me).set(seenKey(userId), '1', 'PX', this.options.recentlyOnlineMs).exec();
    } catch (e) {
      this.logger.debug({ err: (e as Error).message }, 'cluster: releasing a hub link failed');
    }
  }

  private async renew(): Promise<void> {
    if (!this.bus.up) return;
    const users = [...this.registry.users()];
    // Batches keep one renewal round from building a giant pipeline with many thousands of links.
    for (let i = 0; i < users.length; i += 1000) {
      const p = this.bus.batch();
      // Renewed only while ours or nobody's: a newer link elsewhere keeps its claim.
      for (const u of users.slice(i, i + 1000)) p.shRenewLease(hubKey(u), this.me, this.options.leaseMs);
      try {
        await p.exec();
      } catch (e) {
        this.logger.debug({ err: (e as Error).message }, 'cluster: renewing link leases failed');
        return;
      }
    }
  }

  private remote(target: string, userId: string, op: string, params: Record<string, string>, ttl: number): Promise<Remote> {
    if (this.pending.size >= this.options.maxPending)
      return Promise.resolve({ ok: false, error: new HubError('HubBusy', 'The cloud has too many requests in flight; retry shortly.') });
    const id = this.nextId++;
    const answer = new Promise<Remote>((resolve) => {
      const timer = setTimeout(
        () => this.settle(id, { ok: false, error: new HubError('HubTimeout', `Your hub did not answer within ${Math.round(ttl / 1000)} s.`) }),
        // A little beyond the hub's own deadline, so the holder's HubTimeout (or the answer) normally arrives first.
        ttl + 250,
      );
      this.pending.set(id, { resolve, timer, target });
    });
    const msg: RelayRequestMessage = { t: 'req', id, from: this.me, userId, op, params, ttl: Math.min(ttl, 600_000) };
    this.bus.publish(instanceChannel(target), msg).then(
      // Nobody subscribed: that instance is gone, so the request never reached a hub.
      (receivers) => receivers === 0 && this.settle(id, 'gone'),
      () => this.settle(id, unreachable()),
    );
    this.watch();
    return answer;
  }

  /** While requests are out, checks each second that their holders still listen (a SIGKILLed instance stops). */
  private watch(): void {
    if (this.watchTimer) return;
    this.watchTimer = setInterval(() => void this.checkHolders(), 1000);
    this.watchTimer.unref();
  }

  private async checkHolders(): Promise<void> {
    if (!this.pending.size) {
      clearInterval(this.watchTimer);
      this.watchTimer = undefined;
      return;
    }
    const targets = new Set([...this.pending.values()].map((p) => p.target));
    for (const t of targets) {
      let alive: boolean;
      try {
        alive = await this.bus.listening(t);
      } catch {
        alive = false;
      }
      if (!alive)
        this.failPending(
          (p) => p.target === t,
          'The cloud instance holding your hub’s link went away while the request was in flight; it may or may not have been carried out.',
        );
    }
  }

  private failPending(which: (p: PendingRemote) => boolean, message: string): void {
    for (const [id, p] of [...this.pending]) if (which(p)) this.settle(id, { ok: false, error: new HubError('HubOffline', message) });
  }

  private settle(id: number, r: Remote): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    p.resolve(r);
  }

  private onMessage(m: BusMessage): void {
    if (m.t === 'linked') this.wake(m.userId);
    else if (m.t === 'req') void this.serve(m);
    else if (m.t === 'res') this.settle(m.id, answerResult(m));
  }

  /** A request from another instance for a hub linked here. */
  private async serve(m: RelayRequestMessage): Promise<void> {
    const link = this.registry.current(m.userId);
    let answer: RelayAnswerMessage;
    if (!link) answer = { t: 'res', id: m.id, moved: true, ok: false };
    else {
      const r = await link.request(m.op, m.params, m.ttl);
      answer = r.ok
        ? { t: 'res', id: m.id, ok: true, body: r.body }
        : { t: 'res', id: m.id, ok: false, error: { code: r.error.code, message: r.error.message, parameter: r.error.parameter } };
    }
    // If this fails Redis is down; the requester fails the request on its own then.
    await this.bus.publish(instanceChannel(m.from), answer).catch(() => undefined);
  }

  private waitLinked(userId: string, ms: number): Promise<boolean> {
    if (this.waitingCount >= this.options.maxWaiting) return Promise.resolve(false);
    return new Promise((resolve) => {
      const set = this.waiting.get(userId) ?? new Set();
      this.waiting.set(userId, set);
      this.waitingCount++;
      const finish = (linked: boolean) => {
        clearTimeout(timer);
        set.delete(wakeUp);
        if (!set.size) this.waiting.delete(userId);
        this.waitingCount--;
        resolve(linked);
      };
      const wakeUp = () => finish(true);
      const timer = setTimeout(() => finish(false), ms);
      set.add(wakeUp);
    });
  }

  private wake(userId: string): void {
    const set = this.waiting.get(userId);
    if (set) for (const w of [...set]) w();
  }
}

function answerResult(m: RelayAnswerMessage): Remote {
  if (m.moved) return 'gone';
  if (m.ok) return { ok: true, body: m.body ?? {} };
  const e = m.error ?? { code: 'InternalError', message: 'The hub answered without an error description.' };
  const code = (e.code in ERROR_CODES ? e.code : 'InternalError') as ErrorCode;
  return { ok: false, error: new HubError(code, e.message, { parameter: e.parameter }) };
}

function unreachable(): LinkResult {
  return {
    ok: false,
    error: new HubError(
      'HubOffline',
      'Your hub is not linked to this cloud instance and the cluster cannot be reached now to find it; retry shortly.',
    ),
  };
}
