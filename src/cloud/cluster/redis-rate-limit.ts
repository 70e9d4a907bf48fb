import { createHash } from 'node:crypto';
import type { Clock } from '../../core/clock';
import type { Logger } from '../../logger';
import { LimitedLog } from '../../logging/limited-log';
import { RateLimiter, type Limiter, type RateLimit } from '../http/rate-limit';
import type { ClusterBus } from './bus';
import { KEY_PREFIX } from './keys';

/**
 * A cluster-wide rate limit. While Redis is unreachable each instance counts alone (its
 * own RateLimiter): limits stay in force, only per instance, rather than failing open or
 * refusing everyone.
 */
export class RedisRateLimiter implements Limiter {
  private readonly local: RateLimiter;
  private readonly fullMs: number;
  private readonly failed: LimitedLog;

  constructor(
    private readonly name: string,
    private readonly limit: RateLimit,
    private readonly bus: ClusterBus,
    private readonly clock: Clock,
    logger: Logger,
  ) {
    this.local = new RateLimiter(limit, clock);
    this.fullMs = Math.ceil((limit.burst / limit.perSecond) * 1000) + 1000;
    this.failed = new LimitedLog(logger, `cluster: rate limit ${name} counted on this instance only (Redis unreachable)`);
  }

  async take(key: string): Promise<number> {
    if (!this.bus.up) return this.local.take(key);
    // Keys are addresses and usernames: hashed, so their length and characters never matter to Redis.
    const k = `${KEY_PREFIX}rl:${this.name}:${createHash('sha256').update(key).digest('base64url')}`;
    try {
      const wait = await this.bus.scripts.shTakeToken(k, this.limit.burst, this.limit.perSecond, this.clock.now(), this.fullMs);
      return Number(wait);
    } catch (e) {
      this.failed.warn({ err: (e as Error).message });
      return this.local.take(key);
    }
  }
}
