/**
 * The cluster's names in Redis. Every key and channel starts with the prefix (one Redis may
 * serve other programs too). Kept apart from bus.ts so that a single-node cloud never loads
 * ioredis.
 */
export const KEY_PREFIX = 'speakerhub:cloud:';

/** Broadcasts every instance receives (hub linked, token family revoked). */
export const EVENTS_CHANNEL = `${KEY_PREFIX}events`;

/** Requests for hubs linked to an instance, and answers to requests it sent. */
export function instanceChannel(instanceId: string): string {
  return `${KEY_PREFIX}instance:${instanceId}`;
}
