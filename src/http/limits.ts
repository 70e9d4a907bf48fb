import type { ConnectionLimits } from '../net/connection-limits';

/** The server's bounds (config `limits.*`, docs/security.md). */
export interface RestLimits extends ConnectionLimits {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  maxEventStreams: number;
  eventStreamMaxQueued: number;
  eventStreamBufferBytes: number;
  /** Longest Text a play_tts may carry (tts.maxTextLength): the request head must fit it. */
  maxTextLength: number;
}

export const DEFAULT_REST_LIMITS: RestLimits = {
  maxConnections: 2000,
  maxConnectionsPerAddress: 200,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  maxEventStreams: 100,
  eventStreamMaxQueued: 500,
  eventStreamBufferBytes: 64 * 1024,
  maxTextLength: 1000,
};

/**
 * Room for a request head: a Text of maxTextLength UTF-16 units, each up to 9 bytes once
 * percent-encoded (a 3-byte UTF-8 character), plus 16 KiB for the rest. Node's default
 * (16 KiB) would refuse a long Text with a parser error before TextTooLong could be said.
 */
export function maxHeaderBytes(maxTextLength: number): number {
  return Math.max(16 * 1024, maxTextLength * 9 + 16 * 1024);
}
