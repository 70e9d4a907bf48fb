/**
 * Token buckets for rate limits: one bucket holds at most `burst` tokens and gains `perSecond`
 * a second. KeyedBuckets keeps one per key (e.g. per sender address) in a bounded table:
 * full buckets are forgotten first (they are the same as new ones), and when every bucket in
 * a full table is in use a new key is refused rather than let the table grow.
 */
export class TokenBucket {
  private tokens: number;
  private at: number;

  constructor(
    readonly burst: number,
    readonly perSecond: number,
    now = Date.now(),
  ) {
    this.tokens = burst;
    this.at = now;
  }

  private refill(now: number): void {
    if (now > this.at) this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) / 1000) * this.perSecond);
    this.at = now;
  }

  /** Takes n tokens when there are that many; false (and nothing taken) otherwise. */
  take(n = 1, now = Date.now()): boolean {
    this.refill(now);
    if (this.tokens < n) return false;
    this.tokens -= n;
    return true;
  }

  /** Gives back tokens taken for something that did not happen. */
  giveBack(n: number): void {
    this.tokens = Math.min(this.burst, this.tokens + n);
  }

  /** Whether n tokens are there now (nothing taken). */
  has(n = 1, now = Date.now()): boolean {
    this.refill(now);
    return this.tokens >= n;
  }

  full(now = Date.now()): boolean {
    this.refill(now);
    return this.tokens >= this.burst;
  }
}

export class KeyedBuckets {
  private readonly buckets = new Map<string, TokenBucket>();

  constructor(
    private readonly burst: number,
    private readonly perSecond: number,
    private readonly maxKeys: number,
  ) {}

  /** The key's bucket, or undefined when the table is full of buckets in use. */
  get(key: string, now = Date.now()): TokenBucket | undefined {
    let b = this.buckets.get(key);
    if (b) return b;
    if (this.buckets.size >= this.maxKeys) {
      for (const [k, v] of this.buckets) if (v.full(now)) this.buckets.delete(k);
      if (this.buckets.size >= this.maxKeys) return undefined;
    }
    b = new TokenBucket(this.burst, this.perSecond, now);
    this.buckets.set(key, b);
    return b;
  }

  /** Whether the key could take a token now (a key without a bucket could: its bucket would be full). */
  could(key: string, now = Date.now()): boolean {
    const b = this.buckets.get(key);
    return !b || b.has(1, now);
  }

  get size(): number {
    return this.buckets.size;
  }
}
