import type { ChainableCommander } from 'ioredis';

/**
 * The cluster's Lua scripts, atomic in Redis. Defined on the connection (ioredis sends
 * EVALSHA, loading a script only when Redis does not know it yet), so a renewal round of
 * thousands of leases does not resend the script text each time.
 */
// Renew the lease only while it is ours or nobody's: a newer link elsewhere keeps its claim.
export const RENEW_LEASE = `local v = redis.call('GET', KEYS[1])
if v == false or v == ARGV[1] then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end
return 0`;
// Give the location up only if it is still ours.
export const RELEASE_LEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;
// The same token bucket as RateLimiter, kept in a Redis hash so every instance draws from it:
// a brute force spread over instances meets one limit. Atomic as a script; the hash expires
// once it would be full again, so idle keys cost nothing.
export const TAKE_TOKEN = `local burst = tonumber(ARGV[1])
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

/** The scripts as commands (names prefixed so they never shadow a Redis command). */
export interface ClusterScripts {
  shRenewLease(key: string, instance: string, leaseMs: number): Promise<number>;
  shReleaseLease(key: string, instance: string): Promise<number>;
  shTakeToken(key: string, burst: number, perSecond: number, nowMs: number, ttlMs: number): Promise<number>;
}

/** The same, queued on a pipeline or transaction. */
export interface ClusterScriptsQueued {
  shRenewLease(key: string, instance: string, leaseMs: number): ChainableCommander & ClusterScriptsQueued;
  shReleaseLease(key: string, instance: string): ChainableCommander & ClusterScriptsQueued;
}

export const SCRIPTS: Record<keyof ClusterScripts, string> = {
  shRenewLease: RENEW_LEASE,
  shReleaseLease: RELEASE_LEASE,
  shTakeToken: TAKE_TOKEN,
};
