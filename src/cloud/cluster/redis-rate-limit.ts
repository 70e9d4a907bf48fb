import { createHash } from 'node:crypto';
import type { Clock } from '../../core/clock';
import type { Logger } from '../../logger';
import { LimitedLog } from '../../logging/limited-log';
import { RateLimiter, type Limiter, type RateLimit } from '../http/rate-limit';
import type { ClusterBus } from './bus';
import { KEY_PREFIX } from './keys';

// The same token bucket as RateLimiter, kept in a Redis hash so every instance draws from it:
// a brute force spread over instances meets one limit. Atomic as a script; the hash expires
// once it would be full again, so idle keys cost nothing.
const TAKE = `local burst = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local v = redis.call('HMGET', KEYS[1], 't', 'a')
local tokens = tonumber(v[1])
local at = tonumber(v[2])
if tokens == nil or at == nil then tokens = burst at = now end
tokens = math.min(burst, tokens + math.max(0, now - at) / 1000 * rate)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = math.max(1, math.ceil((1 - tokens) / rate)) end
redis.call('HSET', KEYS[1], 't', tostring(tokens), 'a', tostring(now))
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return wait`;

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
      const wait = await this.bus.redis.eval(TAKE, 1, k, this.limit.burst, this.limit.perSecond, this.clock.now(), this.fullMs);
      return Number(wait);
    } catch (e) {
      this.failed.warn({ err: (e as Error).message });
      return this.local.take(key);
    }
  }
}
