import { hash as cryptoHash, randomBytes } from 'node:crypto';
import { HubError } from './errors';
import type { Clock } from './clock';
import { sameString } from '../util/constant-time';

/** A session as it can be saved: the token's SHA-256 (never the token) and its last use. */
export type SessionRecord = [tokenHash: string, lastUsed: number];

/** What changed: 'table' (a session created, closed or evicted) or 'touch' (only idle times). */
export type SessionChange = 'table' | 'touch';

export interface SessionOptions {
  /** Idle time after which a session expires; each command renews it. */
  idleMs: number;
  /** Table bound: beyond it the session idle the longest is evicted. */
  maxSessions: number;
}

/**
 * The session table. Tokens are 192 random bits; the table keys on their SHA-256 so a
 * lookup never compares secret bytes (no timing signal) and no token is kept in clear.
 * The Map's insertion order is kept as idle order (touch re-inserts), so the first entry is
 * always the one idle the longest: eviction and expiry sweeps are O(expired).
 */
export class SessionStore {
  private readonly byHash = new Map<string, { lastUsed: number }>();
  /** Sessions of trusted front ends (MQTT bridge, Node-RED, HomeKit): no expiry, no eviction. */
  private readonly trusted = new Set<string>();
  /** The key inserted last into byHash (its last entry), while it is there. */
  private newest?: string;
  /** Told about changes (the hub saves the table so that sessions survive restarts). */
  onChange?: (change: SessionChange) => void;
  /**
   * Set by whatever keeps the table (src/persistence/session-file.ts): resolves once the
   * table as it is now is on disk. Unset: nothing is kept, and committed() resolves at once.
   */
  durability?: () => Promise<void>;

  constructor(
    private readonly clock: Clock,
    private readonly options: SessionOptions,
  ) {}

  get size(): number {
    this.sweep();
    return this.byHash.size;
  }

  create(): string {
    this.sweep();
    const token = randomBytes(24).toString('base64url');
    while (this.byHash.size >= this.options.maxSessions) {
      const oldest = this.byHash.keys().next().value as string;
      this.byHash.delete(oldest);
    }
    const key = hash(token);
    this.byHash.set(key, { lastUsed: this.clock.now() });
    this.newest = key;
    this.onChange?.('table');
    return token;
  }

  /**
   * Resolves once a session just created or closed is durable: a hub killed right after
   * answering init_session or close_session comes back with exactly the sessions it answered.
   */
  committed(): Promise<void> {
    return this.durability ? this.durability() : Promise.resolve();
  }

  /** The ordinary sessions, longest idle first (trusted ones are never saved: their front ends open new ones). */
  records(): SessionRecord[] {
    this.sweep();
    return [...this.byHash].map(([key, e]) => [key, e.lastUsed]);
  }

  /**
   * Puts saved sessions back (at start, before any request): expired ones are dropped, and
   * beyond maxSessions only the most recently used are kept.
   */
  restore(records: readonly SessionRecord[]): number {
    const cutoff = this.clock.now() - this.options.idleMs;
    const live = records.filter(([key, lastUsed]) => typeof key === 'string' && Number.isFinite(lastUsed) && lastUsed > cutoff);
    live.sort((a, b) => a[1] - b[1]);
    for (const [key, lastUsed] of live.slice(-this.options.maxSessions)) {
      this.byHash.delete(key);
      this.byHash.set(key, { lastUsed });
    }
    while (this.byHash.size > this.options.maxSessions) this.byHash.delete(this.byHash.keys().next().value as string);
    this.newest = undefined;
    return this.byHash.size;
  }

  /**
   * A session for a front end the hub itself runs: it never expires and is never evicted,
   * so a bridge's commands cannot fail with SessionNotFound. The front end closes it at stop.
   */
  createTrusted(): string {
    const token = randomBytes(24).toString('base64url');
    this.trusted.add(hash(token));
    return token;
  }

  /**
   * Checks the token and renews its idle timer; throws SessionNotFound otherwise. A caller that
   * sees one client's requests in a row (the REST server, per connection) passes a memo: the
   * token's SHA-256 is then taken once per connection, not once per request (a quarter of the
   * hub's own work on an operation GET). The memo is compared in constant time.
   */
  touch(token: string, memo?: SessionMemo): string {
    const key = memo ? keyFor(token, memo) : hash(token);
    if (this.trusted.has(key)) return key;
    const entry = this.byHash.get(key);
    const now = this.clock.now();
    if (!entry || now - entry.lastUsed >= this.options.idleMs) {
      if (entry) this.byHash.delete(key);
      throw new HubError('SessionNotFound', 'Unknown, closed or expired session; call init_session for a new SessionToken.');
    }
    entry.lastUsed = now;
    // Re-inserted to keep idle order, unless it is the newest already (a client polling alone).
    if (key !== this.newest) {
      this.byHash.delete(key);
      this.byHash.set(key, entry);
      this.newest = key;
    }
    this.onChange?.('touch');
    return key;
  }

  /** Whether a session key (what touch answers) is in the table and not expired. */
  hasKey(key: string): boolean {
    if (this.trusted.has(key)) return true;
    const entry = this.byHash.get(key);
    return !!entry && this.clock.now() - entry.lastUsed < this.options.idleMs;
  }

  close(token: string): string {
    const key = this.touch(token);
    this.byHash.delete(key);
    this.trusted.delete(key);
    this.onChange?.('table');
    return key;
  }

  /** Drops expired sessions from the idle end of the table. */
  sweep(): void {
    const cutoff = this.clock.now() - this.options.idleMs;
    for (const [key, entry] of this.byHash) {
      if (entry.lastUsed > cutoff) break;
      this.byHash.delete(key);
    }
  }
}

/** What one client connection last presented: its token and that token's key. Opaque to callers. */
export interface SessionMemo {
  token?: string;
  key?: string;
}

function keyFor(token: string, memo: SessionMemo): string {
  if (memo.key !== undefined && sameString(token, memo.token!)) return memo.key;
  const key = hash(token);
  memo.token = token;
  memo.key = key;
  return key;
}

function hash(token: string): string {
  return cryptoHash('sha256', token, 'base64url');
}
