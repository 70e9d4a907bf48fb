import { hash as cryptoHash, randomBytes } from 'node:crypto';
import { HubError } from './errors';
import type { Clock } from './clock';

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
    this.byHash.set(hash(token), { lastUsed: this.clock.now() });
    return token;
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

  /** Checks the token and renews its idle timer; throws SessionNotFound otherwise. */
  touch(token: string): void {
    const key = hash(token);
    if (this.trusted.has(key)) return;
    const entry = this.byHash.get(key);
    const now = this.clock.now();
    if (!entry || now - entry.lastUsed >= this.options.idleMs) {
      if (entry) this.byHash.delete(key);
      throw new HubError('SessionNotFound', 'Unknown, closed or expired session; call init_session for a new SessionToken.');
    }
    this.byHash.delete(key);
    entry.lastUsed = now;
    this.byHash.set(key, entry);
  }

  close(token: string): void {
    this.touch(token);
    const key = hash(token);
    this.byHash.delete(key);
    this.trusted.delete(key);
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

function hash(token: string): string {
  return cryptoHash('sha256', token, 'base64url');
}
