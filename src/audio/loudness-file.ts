import { open, writeFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { decodeWithFfmpeg, type FfmpegOptions } from './ffmpeg-pcm';
import { normaliseLoudnessAsync, type LoudnessTarget, type NormaliseResult, warmUpLoudness } from './loudness';
import { decodeWav, encodeWav16, type Pcm, readWavInfo } from './pcm-wav';

export type { LoudnessTarget } from './loudness';

export const DEFAULT_LOUDNESS: LoudnessTarget = { integrated: -16, truePeak: -1.5 };

export interface LoudnessNormaliserOptions {
  target: LoudnessTarget;
  ffmpegPath?: string;
  /** One ffmpeg run (decoding a non-WAV file) may take this long. Default 20 s. */
  timeoutMs?: number;
  /** Audio is cut after this many seconds. Default 600. */
  maxSeconds?: number;
}

/** Where one normalisation spent its time (ms), for the logs. */
export type NormaliseTimings = {
  decode: number;
  loudness: number;
  write: number;
};

/**
 * Brings audio files to the target loudness, once: the result is a 16-bit WAV whose INFO
 * comment names the target (`tag`), so a file already done is recognised from its header and
 * costs no loudness work again (the TTS cache keeps its entries this way; the announcement
 * clip then plays a cached text as it is). WAV is decoded in process; anything else by ffmpeg.
 */
export class LoudnessNormaliser {
  readonly target: LoudnessTarget;
  /** Written into every normalised file; part of cache keys (a new target is new audio). */
  readonly tag: string;
  readonly ffmpeg: FfmpegOptions;

  constructor(o: LoudnessNormaliserOptions) {
    this.target = o.target;
    this.tag = `SpeakerHub loudness r128-v1 I=${o.target.integrated.toFixed(1)} TP=${o.target.truePeak.toFixed(1)}`;
    const maxSeconds = o.maxSeconds ?? 600;
    // Float stereo at 48 kHz for maxSeconds, the most a decode may hand back.
    warmUpLoudness();
    this.ffmpeg = {
      ffmpegPath: o.ffmpegPath ?? 'ffmpeg',
      timeoutMs: o.timeoutMs ?? 20_000,
      maxSeconds,
      maxBytes: Math.ceil(maxSeconds * 48_000 * 2 * 4) + 4096,
    };
  }

  /** Whether the file's header says it is at this target already (reads 4 KiB). */
  async isNormalised(file: string): Promise<boolean> {
    const fh = await open(file, 'r');
    try {
      const { size } = await fh.stat();
      const head = Buffer.alloc(Math.min(size, 4096));
      await fh.read(head, 0, head.length, 0);
      return readWavInfo(head, size)?.comment === this.tag;
    } finally {
      await fh.close();
    }
  }

  /**
   * A file's samples, mono or stereo: WAV in process, anything else (and WAV wider than
   * stereo) through ffmpeg. `normalised` when its header carries this target's tag.
   */
  async load(file: string): Promise<{ pcm: Pcm; normalised: boolean }> {
    const bytes = await readHead(file, (head, size) => {
      // Of a WAV, only the header and the samples used (maxSeconds of them): a long file is not read whole.
      const info = readWavInfo(head, size);
      return info ? info.dataOffset + Math.min(info.dataBytes, Math.ceil(this.ffmpeg.maxSeconds * info.rate) * info.channels * (info.bits / 8)) : 0;
    });
    const info = bytes && readWavInfo(bytes);
    if (bytes && info && info.channels <= 2) {
      return { pcm: decodeWav(bytes, Math.ceil(this.ffmpeg.maxSeconds * info.rate)), normalised: info.comment === this.tag };
    }
    return { pcm: await decodeWithFfmpeg(['-i', file], this.ffmpeg), normalised: false };
  }

  /** The samples at the target loudness (see normaliseLoudness; long audio lets the event loop run between passes). */
  normalise(pcm: Pcm): Promise<{ pcm: Pcm; result: NormaliseResult }> {
    return normaliseLoudnessAsync(pcm, this.target);
  }

  /** The samples as a 16-bit WAV file tagged as normalised (they must be). */
  encode(pcm: Pcm): Buffer {
    return encodeWav16(pcm, this.tag);
  }

  /** Reads `input`, writes it at the target loudness to `output` (a tagged WAV). Rejects if it cannot be decoded. */
  async normaliseFile(input: string, output: string): Promise<{ result?: NormaliseResult; ms: NormaliseTimings }> {
    const t0 = performance.now();
    const loaded = await this.load(input);
    const t1 = performance.now();
    let pcm = loaded.pcm;
    let result: NormaliseResult | undefined;
    if (!loaded.normalised) ({ pcm, result } = await this.normalise(pcm));
    const t2 = performance.now();
    await writeFile(output, this.encode(pcm));
    const t3 = performance.now();
    return { result, ms: { decode: round(t1 - t0), loudness: round(t2 - t1), write: round(t3 - t2) } };
  }
}

/** Up to 64 KiB of the file's head, then the first `wanted(head, size)` bytes in all (none: undefined). */
async function readHead(file: string, wanted: (head: Buffer, size: number) => number): Promise<Buffer | undefined> {
  const fh = await open(file, 'r');
  try {
    const { size } = await fh.stat();
    const head = Buffer.alloc(Math.min(size, 65_536));
    await fh.read(head, 0, head.length, 0);
    const total = Math.min(size, wanted(head, size));
    if (total <= 0) return undefined;
    if (total <= head.length) return head.subarray(0, total);
    const all = Buffer.alloc(total);
    head.copy(all);
    await fh.read(all, head.length, total - head.length, head.length);
    return all;
  } finally {
    await fh.close();
  }
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
