import type { Clock } from '../../core/clock';
import type { Limiter } from '../http/rate-limit';

/**
 * What the guard remembers between attempts: failures per (address, username) and the
 * addresses a user signed in from. Local (bounded) on one node, Redis in a cluster.
 */
export interface SigninMemory {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string, ttlMs: number): Promise<void>;
  del(key: string): Promise<void>;
}

/** A bounded in-process memory: the least recently written entry goes when full. */
export class LocalSigninMemory implements SigninMemory {
  private readonly map = new Map<string, { v: string; until: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly maxKeys = 50_000,
  ) {}

  async get(key: string): Promise<string | undefined> {
    const e = this.map.get(key);
    if (!e) return undefined;
    if (e.until < this.clock.now()) {
      this.map.delete(key);
      return undefined;
    }
    return e.v;
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    this.map.delete(key);
    if (this.map.size >= this.maxKeys) this.map.delete(this.map.keys().next().value as string);
    this.map.set(key, { v: value, until: this.clock.now() + ttlMs });
  }

  async del(key: string): Promise<void> {
    this.map.delete(key);
  }
}

export interface SigninLimits {
  /** Attempts per source address, whatever the username. */
  byAddress: Limiter;
  /** Attempts per (source address, username). */
  byUser: Limiter;
  /** Attempts per username from addresses it never signed in from (guessing spread over many addresses). */
  byUsername: Limiter;
}

/** Failures per (address, username) before backoff starts, and its longest wait. */
export const FREE_FAILURES = 5;
export const MAX_BACKOFF_S = 15 * 60;
/** How long a successful sign-in makes its address known for that user. */
const KNOWN_MS = 30 * 24 * 3600_000;
/** How long failures are remembered after the last one. */
const FAILURES_MS = 24 * 3600_000;

/**
 * Password guessing slows the guesser, not the owner. Limits apply per source address and
 * per (address, username), with exponential backoff on that pair's failures (after 5, the
 * next attempt waits 1 s, 2 s, 4 s … up to 15 min after the last failure; a success clears
 * it). The per-username limit, which meets guesses spread over many addresses, counts only
 * attempts from addresses that have not signed in as that user within 30 days and that passed
 * the per-address limits: the owner at an address they used before always gets in, and an
 * attacker's refused attempts never drain it.
 */
export class SigninGuard {
  constructor(
    private readonly limits: SigninLimits,
    private readonly memory: SigninMemory,
    private readonly clock: Clock,
  ) {}

  /** 0 when the attempt may go ahead (and is counted), else the seconds to wait. */
  async delay(ip: string, username: string): Promise<number> {
    const user = username.toLowerCase();
    const [byAddress, byPair, backoff] = await Promise.all([
      this.limits.byAddress.take(ip),
      this.limits.byUser.take(`${ip}\n${user}`),
      this.backoff(ip, user),
    ]);
    const wait = Math.max(byAddress, byPair, backoff);
    if (wait) return wait;
    if (await this.memory.get(knownKey(ip, user))) return 0;
    return this.limits.byUsername.take(user);
  }

  /** The attempt's outcome: a success clears the pair's failures and makes the address known. */
  async record(ip: string, username: string, ok: boolean): Promise<void> {
    const user = username.toLowerCase();
    if (ok) {
      await Promise.all([this.memory.del(failKey(ip, user)), this.memory.set(knownKey(ip, user), '1', KNOWN_MS)]);
      return;
    }
    const n = parseFailures(await this.memory.get(failKey(ip, user))).n + 1;
    await this.memory.set(failKey(ip, user), `${n}:${this.clock.now()}`, FAILURES_MS);
  }

  private async backoff(ip: string, user: string): Promise<number> {
    const f = parseFailures(await this.memory.get(failKey(ip, user)));
    if (f.n < FREE_FAILURES) return 0;
    const waitMs = Math.min(2 ** (f.n - FREE_FAILURES), MAX_BACKOFF_S) * 1000;
    const left = f.at + waitMs - this.clock.now();
    return left > 0 ? Math.ceil(left / 1000) : 0;
  }
}

const failKey = (ip: string, user: string) => `fail\n${ip}\n${user}`;
const knownKey = (ip: string, user: string) => `known\n${ip}\n${user}`;

function parseFailures(v: string | undefined): { n: number; at: number } {
  const m = /^(\d+):(\d+)$/.exec(v ?? '');
  return m ? { n: Number(m[1]), at: Number(m[2]) } : { n: 0, at: 0 };
}
