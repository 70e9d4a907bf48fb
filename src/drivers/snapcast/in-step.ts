import type { SampleFormat } from './feeder';

/**
 * What feeding several snapserver streams in step (issue 30: a zone's stream and its client
 * streams) takes beyond a feed: snapserver 0.26 stamps the first PCM it reads of a source
 * connection with the moment it reads it (less a chunk) and the rest by the clock from there
 * (server/streamreader/asio_stream.hpp), reads it 20 ms at a time, and encodes it (flac) in
 * blocks; so two streams play a sample at the same instant when their first PCM is read at the
 * moment the other reads that same sample, on the same chunk grid, and nothing is left over in
 * the encoder from an earlier connection.
 */

/**
 * Another stream fed the same PCM at the same moments as a feed's own (a client stream, issue
 * 30): each piece as the feed hands it over, unmixed and through the mix.
 */
export interface FeedFollower {
  /** `mixed` is `raw` itself when nothing is mixed in. */
  write(raw: Buffer, mixed: Buffer): void;
  /** The feed handed over its last PCM and snapserver has had time to read it. */
  end(): void;
  /** The feed stopped or failed. */
  destroy(): void;
}

/** snapserver's default `chunk_ms`: it reads a source 20 ms at a time, and drops a partial chunk at the end of a connection. */
export const SOURCE_CHUNK_MS = 20;
/** The block snapserver's default codec (flac, compression level 0-2) encodes at once, frames. */
const FLAC_BLOCK_FRAMES = 1152;

/** A source connection closed with its last PCM and padding is dropped after this long, read or not (ms). */
export const CLOSE_TIMEOUT_MS = 2000;

const gcd = (a: number, b: number): number => (b ? gcd(b, a % b) : a);

/**
 * Silence that completes a connection's PCM to a whole number of snapserver's read chunks and
 * flac blocks (issue 30). What a connection leaves in the encoder (a partial block) is encoded
 * with the next connection's first PCM under that one's first timestamp, so the next
 * connection plays that much late (0-24 ms, measured 12.7 ms); a stream fed in step with
 * another must not carry that. At 48 kHz the unit is 5760 frames (120 ms); at a rate where it
 * would be longer than 250 ms, whole read chunks only (the flac remainder stays).
 */
export function closingPad(format: SampleFormat, bytesWritten: number): Buffer {
  const frameBytes = (format.bits / 8) * format.channels;
  const chunk = Math.round((format.rate * SOURCE_CHUNK_MS) / 1000);
  const lcm = (chunk * FLAC_BLOCK_FRAMES) / gcd(chunk, FLAC_BLOCK_FRAMES);
  const unit = (lcm <= format.rate / 4 ? lcm : chunk) * frameBytes;
  const rest = bytesWritten % unit;
  return Buffer.alloc(rest ? unit - rest : 0);
}
