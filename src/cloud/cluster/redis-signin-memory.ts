import { createHash } from 'node:crypto';
import type { Clock } from '../../core/clock';
import type { Logger } from '../../logger';
import { LimitedLog } from '../../logging/limited-log';
import { LocalSigninMemory, type SigninMemory } from '../accounts/signin-guard';
import type { ClusterBus } from './bus';
import { KEY_PREFIX } from './keys';

/**
 * The sign-in guard's memory shared by the cluster (failures and known addresses seen by any
 * instance count on all). While Redis is unreachable each instance remembers alone, as the
 * rate limits do.
 */
export class RedisSigninMemory implements SigninMemory {
  private readonly local: LocalSigninMemory;
  private readonly failed: LimitedLog;

  constructor(
    private readonly bus: ClusterBus,
    clock: Clock,
    logger: Logger,
  ) {
    this.local = new LocalSigninMemory(clock);
    this.failed = new LimitedLog(logger, 'cluster: sign-in failures remembered on this instance only (Redis unreachable)');
  }

  async get(key: string): Promise<string | undefined> {
    if (!this.bus.up) return this.local.get(key);
    try {
      return (await this.bus.redis.get(redisKey(key))) ?? undefined;
    } catch (e) {
      this.failed.warn({ err: (e as Error).message });
      return this.local.get(key);
    }
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    await this.local.set(key, value, ttlMs);
    if (!this.bus.up) return;
    await this.bus.redis.set(redisKey(key), value, 'PX', ttlMs).catch((e: Error) => this.failed.warn({ err: e.message }));
  }

  async del(key: string): Promise<void> {
    await this.local.del(key);
    if (!this.bus.up) return;
    await this.bus.redis.del(redisKey(key)).catch((e: Error) => this.failed.warn({ err: e.message }));
  }
}

/** Keys name addresses and usernames: hashed, so their length and characters never matter to Redis. */
function redisKey(key: string): string {
  return `${KEY_PREFIX}signin:${createHash('sha256').update(key).digest('base64url')}`;
}
