import type { Clock } from '../../core/clock';

export interface RateLimit {
  /** Requests allowed at once. */
  burst: number;
  /** Requests regained per second. */
  perSecond: number;
}

/** A limit's counter: 0 when the request is allowed (and counted), else the seconds to wait. */
export interface Limiter {
  take(key: string): number | Promise<number>;
}

/**
 * Token buckets per key (an address, an address plus a username). The table is bounded:
 * when full, the least recently used bucket goes (a flood of new keys cannot grow it).
 */
export class RateLimiter implements Limiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly limit: RateLimit,
    private readonly clock: Clock,
    private readonly maxKeys = 20_000,
  ) {}

  /** 0 when allowed (and counted), else the seconds to wait. */
  take(key: string): number {
    const now = this.clock.now();
    let b = this.buckets.get(key);
    if (b) {
      this.buckets.delete(key);
      b.tokens = Math.min(this.limit.burst, b.tokens + ((now - b.at) / 1000) * this.limit.perSecond);
      b.at = now;
    } else {
      if (this.buckets.size >= this.maxKeys) this.buckets.delete(this.buckets.keys().next().value as string);
      b = { tokens: this.limit.burst, at: now };
    }
    this.buckets.set(key, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / this.limit.perSecond));
  }
}
