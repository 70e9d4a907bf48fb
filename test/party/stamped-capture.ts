import type { Readable } from 'node:stream';

/**
 * A snapclient's play-out (`--player file:filename=stdout`), kept in memory with every read
 * stamped on the monotonic clock, so that a frame's output instant can be compared with
 * another family's player (a squeezelite's pacer stamps the same clock) or with the instant a
 * REST request was sent. Used by test/party/zones.lab.test.ts, test/drivers/snapcast/client-streams.ts
 * and, compiled by bench/tsconfig.snapcast-zones.json and bench/tsconfig.snapcast-duck-gaps.json,
 * by bench/snapcast-zones.js and bench/snapcast-duck-gaps.js.
 *
 * Why read stamps and not sample indexes: snapclient 0.26's file player writes, every 50 ms
 * on a steady-clock timer, the 50 ms block that should reach its "DAC" 10 ms later, and its
 * output starts whenever the player was created; so block k is written at c_0 + k·50 ms, each
 * read bounds that from above, and the tightest bound pins it (as test/drivers/snapcast/offset.ts and
 * bench/cross-family-skew.js do). A frame then plays at its block's write instant + 10 ms +
 * its place within the block.
 */
export const SNAP_RATE = 48000;
const SNAP_FRAME = 4;
/** The file player's block: 50 ms of frames. */
export const BLOCK_FRAMES = SNAP_RATE / 20;
const BLOCK_NS = 50_000_000n;
const DAC_MS = 10;

export class StampedCapture {
  private chunks: Buffer[] = [];
  /** Byte offset of each chunk's start. */
  private starts: number[] = [];
  /** [frames received in total, monotonic ns when the read arrived] per read. */
  private reads: [number, bigint][] = [];
  private bytes = 0;

  constructor(stdout: Readable) {
    stdout.on('data', (d: Buffer) => {
      const now = process.hrtime.bigint();
      this.starts.push(this.bytes);
      this.chunks.push(d);
      this.bytes += d.length;
      this.reads.push([Math.floor(this.bytes / SNAP_FRAME), now]);
      // Only the last minute of read stamps is ever looked at (±25 blocks around a frame).
      if (this.reads.length > 4000) this.reads.splice(0, 1000);
    });
  }

  /** Whole frames captured so far: a mark to look from. */
  get frames(): number {
    return Math.floor(this.bytes / SNAP_FRAME);
  }

  /** Bytes captured so far. */
  get size(): number {
    return this.bytes;
  }

  /** The captured bytes [from, to), both channels (`from` down to a whole frame). */
  pcm(from: number, to = this.bytes): Buffer {
    from -= from % SNAP_FRAME;
    const parts: Buffer[] = [];
    for (let i = 0; i < this.chunks.length; i++) {
      const s = this.starts[i];
      const c = this.chunks[i];
      if (s + c.length <= from || s >= to) continue;
      parts.push(c.subarray(Math.max(0, from - s), Math.min(c.length, to - s)));
    }
    return Buffer.concat(parts);
  }

  /** Left-channel samples of frames [from, to), only the chunks that hold them copied. */
  samples(from: number, to = this.frames): Int16Array {
    const a = from * SNAP_FRAME;
    const b = Math.max(a, to * SNAP_FRAME);
    const out = new Int16Array((b - a) / SNAP_FRAME);
    // The chunks are in order: find the first one that reaches `a` by binary search.
    let lo = 0;
    let hi = this.chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid] <= a) lo = mid;
      else hi = mid - 1;
    }
    const pcm = Buffer.concat(this.chunks.slice(lo, this.chunkAfter(b, lo) + 1));
    const base = a - (this.starts[lo] ?? 0);
    for (let i = 0; i < out.length && base + i * SNAP_FRAME + 2 <= pcm.length; i++) out[i] = pcm.readInt16LE(base + i * SNAP_FRAME);
    return out;
  }

  private chunkAfter(byte: number, from: number): number {
    let i = from;
    while (i + 1 < this.chunks.length && this.starts[i + 1] < byte) i++;
    return i;
  }

  /** First frame from `from` on whose left sample reaches `threshold` (absolute), or -1. */
  firstLoud(from: number, threshold: number): number {
    const s = this.samples(from);
    for (let i = 0; i < s.length; i++) if (Math.abs(s[i]) >= threshold) return from + i;
    return -1;
  }

  /** Monotonic ms at which frame `f` reached the client's DAC, or undefined without reads around it yet. */
  outputMs(f: number): number | undefined {
    const k = Math.floor(f / BLOCK_FRAMES);
    let best: bigint | undefined;
    for (const [frames, arrived] of this.reads) {
      const last = Math.floor(frames / BLOCK_FRAMES) - 1; // the last block complete at this read
      if (last < 0 || Math.abs(last - k) > 25) continue;
      const bound = arrived - BigInt(last - k) * BLOCK_NS;
      if (best === undefined || bound < best) best = bound;
    }
    if (best === undefined) return undefined;
    return Number(best) / 1e6 + DAC_MS + ((f - k * BLOCK_FRAMES) / SNAP_RATE) * 1000;
  }
}

/** Monotonic ms, the clock of the read stamps and of the squeezelite pacers. */
export function monoMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : NaN;
}
