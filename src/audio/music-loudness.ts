import { kWeighting } from './loudness';
import type { PcmFormat } from './duck-mix';

/** Steps of the running window: BS.1770's 100 ms hop. */
const STEP_S = 0.1;

/**
 * The short-term loudness (EBU R128 "S", LUFS) of music as it flows by: K-weighted mean
 * square over the last few seconds (3 s by default, as R128 defines short-term), so a ducked
 * announcement can be placed relative to the music the listener hears right now (issue 21).
 * Bounded: one number per 100 ms step in a fixed ring; per sample two biquads per channel.
 * Every channel weighs 1 (mono and stereo, as loudness.ts).
 */
export class MusicLoudness {
  private readonly shelf: { b: [number, number, number]; a: [number, number] };
  private readonly highPass: { b: [number, number, number]; a: [number, number] };
  /** Filter state per channel: x1 x2 y1 y2 z1 z2. */
  private readonly state: Float64Array;
  private readonly bytes: 2 | 4;
  private readonly scale: number;
  private readonly stepFrames: number;
  /** K-weighted energy per finished step (ring), and the step being filled. */
  private readonly ring: Float64Array;
  private ringAt = 0;
  private ringFilled = 0;
  private current = 0;
  private currentFrames = 0;
  /** A partial frame left from the last chunk (callers need not align). */
  private rest: Buffer = Buffer.alloc(0);

  constructor(
    private readonly format: PcmFormat,
    windowS = 3,
  ) {
    [this.shelf, this.highPass] = kWeighting(format.rate);
    this.state = new Float64Array(6 * format.channels);
    this.bytes = format.bits === 16 ? 2 : 4;
    this.scale = format.bits === 16 ? 1 / 32768 : 1 / 2147483648;
    this.stepFrames = Math.max(1, Math.round(format.rate * STEP_S));
    this.ring = new Float64Array(Math.max(1, Math.round(windowS / STEP_S)));
  }

  /** PCM of the music, in `format` (any length). */
  push(chunk: Buffer): void {
    const { channels } = this.format;
    const frameBytes = channels * this.bytes;
    let pcm = chunk;
    if (this.rest.length) {
      pcm = Buffer.concat([this.rest, chunk]);
      this.rest = Buffer.alloc(0);
    }
    const frames = Math.floor(pcm.length / frameBytes);
    if (pcm.length > frames * frameBytes) this.rest = Buffer.from(pcm.subarray(frames * frameBytes));
    const { b: sb, a: sa } = this.shelf;
    const ha = this.highPass.a;
    const st = this.state;
    const is16 = this.bytes === 2;
    for (let f = 0; f < frames; f++) {
      const base = f * frameBytes;
      let sum = 0;
      for (let c = 0; c < channels; c++) {
        const x0 = (is16 ? pcm.readInt16LE(base + c * 2) : pcm.readInt32LE(base + c * 4)) * this.scale;
        const k = c * 6;
        const y0 = sb[0] * x0 + sb[1] * st[k] + sb[2] * st[k + 1] - sa[0] * st[k + 2] - sa[1] * st[k + 3];
        const z0 = y0 - 2 * st[k + 2] + st[k + 3] - ha[0] * st[k + 4] - ha[1] * st[k + 5];
        st[k + 1] = st[k];
        st[k] = x0;
        st[k + 3] = st[k + 2];
        st[k + 2] = y0;
        st[k + 5] = st[k + 4];
        st[k + 4] = z0;
        sum += z0 * z0;
      }
      this.current += sum;
      if (++this.currentFrames >= this.stepFrames) {
        this.ring[this.ringAt] = this.current;
        this.ringAt = (this.ringAt + 1) % this.ring.length;
        this.ringFilled = Math.min(this.ring.length, this.ringFilled + 1);
        this.current = 0;
        this.currentFrames = 0;
      }
    }
  }

  /** Seconds of music measured so far, up to the window. */
  get seconds(): number {
    return this.ringFilled * STEP_S;
  }

  /**
   * Short-term loudness (LUFS) over the last window (what has flowed, if less); -Infinity
   * before the first 400 ms (a BS.1770 block) or for silence (below the -70 LUFS gate).
   */
  get lufs(): number {
    if (this.ringFilled < 4) return -Infinity;
    let e = 0;
    for (let i = 0; i < this.ringFilled; i++) e += this.ring[i];
    const z = e / (this.ringFilled * this.stepFrames);
    const l = z > 0 ? -0.691 + 10 * Math.log10(z) : -Infinity;
    return l > -70 ? l : -Infinity;
  }
}
