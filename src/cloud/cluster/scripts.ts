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

// The hub lists: a hash per user, field `<instance>.<link>` = `<expires ms>|<connected ms>|<uuid>`.
// Each field carries its own expiry (Redis' clock, so instances' clocks never matter): a dead
// instance's links vanish from the list after a lease even while other instances keep the
// hash alive. Expired fields are pruned on every write and read.
const LIVE_HUBS = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local all = redis.call('HGETALL', KEYS[1])
local live = {}
for i = 1, #all, 2 do
  local exp, at = string.match(all[i + 1], '^(%d+)|(%d+)|')
  if exp == nil or tonumber(exp) < now then redis.call('HDEL', KEYS[1], all[i]) else table.insert(live, {all[i], tonumber(at), all[i + 1]}) end
end`;
// Put (or renew) one link; with a cap > 0 a new link that would take the account over it is
// not listed (removed again) and 1 returned: its instance refuses it. Links listed are live
// (renewed by the instance whose heartbeat they answer), so a newcomer never evicts one.
export const PUT_HUB = `local t0 = redis.call('TIME')
local lease = tonumber(ARGV[4])
redis.call('HSET', KEYS[1], ARGV[1], (tonumber(t0[1]) * 1000 + math.floor(tonumber(t0[2]) / 1000) + lease) .. '|' .. ARGV[2] .. '|' .. ARGV[3])
${LIVE_HUBS}
local max = tonumber(ARGV[5])
if max > 0 and #live > max then
  redis.call('HDEL', KEYS[1], ARGV[1])
  return 1
end
if redis.call('PTTL', KEYS[1]) < lease then redis.call('PEXPIRE', KEYS[1], lease) end
return 0`;
// The live links: field, value, field, value…
export const LIST_HUBS = `${LIVE_HUBS}
local out = {}
for _, l in ipairs(live) do table.insert(out, l[1]) table.insert(out, l[3]) end
return out`;

/** The scripts as commands (names prefixed so they never shadow a Redis command). */
export interface ClusterScripts {
  shRenewLease(key: string, instance: string, leaseMs: number): Promise<number>;
  shReleaseLease(key: string, instance: string): Promise<number>;
  shTakeToken(key: string, burst: number, perSecond: number, nowMs: number, ttlMs: number): Promise<number>;
  shPutHub(key: string, field: string, connectedAt: number, uuid: string, leaseMs: number, max: number): Promise<number>;
  shListHubs(key: string): Promise<string[]>;
}

/** The same, queued on a pipeline or transaction. */
export interface ClusterScriptsQueued {
  shRenewLease(key: string, instance: string, leaseMs: number): ChainableCommander & ClusterScriptsQueued;
  shReleaseLease(key: string, instance: string): ChainableCommander & ClusterScriptsQueued;
  shPutHub(key: string, field: string, connectedAt: number, uuid: string, leaseMs: number, max: number): ChainableCommander & ClusterScriptsQueued;
}

export const SCRIPTS: Record<keyof ClusterScripts, string> = {
  shRenewLease: RENEW_LEASE,
  shReleaseLease: RELEASE_LEASE,
  shTakeToken: TAKE_TOKEN,
  shPutHub: PUT_HUB,
  shListHubs: LIST_HUBS,
};
