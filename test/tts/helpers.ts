import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/logger';
import type { TtsProvider } from '../../src/tts/provider';

/**
 * A real MPEG-1 Layer III stream of silence: 128 kbit/s, 44.1 kHz stereo frames whose side
 * information is all zero (no coded samples), which decoders play as silence.
 */
export function silentMp3(seconds: number): Buffer {
  const frameBytes = Math.floor((144 * 128_000) / 44_100); // 417, no padding
  const frames = Math.ceil((seconds * 44_100) / 1152);
  const frame = Buffer.alloc(frameBytes);
  frame.set([0xff, 0xfb, 0x90, 0x00]); // sync, MPEG-1, Layer III, no CRC, 128 kbit/s, 44.1 kHz, stereo
  return Buffer.concat(Array.from({ length: frames }, () => frame));
}

export function tempDir(prefix: string): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), `speakerhub-${prefix}-`));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A logger whose output the test can read. */
export function captureLogger(): { logger: Logger; text(): string } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { logger: createLogger({ level: 'debug', stream }), text: () => lines.join('') };
}

/** Wraps a real provider to count how often it is asked to synthesize. */
export class CountingProvider implements TtsProvider {
  calls: Array<{ text: string; voice: string }> = [];
  constructor(private readonly inner: TtsProvider) {}
  get name(): string {
    return this.inner.name;
  }
  get format(): { ext: string; contentType: string } {
    return this.inner.format;
  }
  synthesize(text: string, voice: string, outFile: string): Promise<void> {
    this.calls.push({ text, voice });
    return this.inner.synthesize(text, voice, outFile);
  }
}

/** What a spoken WAV file holds, measured in 20 ms windows (first channel). */
export interface SpeechStats {
  rate: number;
  seconds: number;
  /** RMS of the whole file, dBFS. */
  rmsDb: number;
  /** Share of windows louder than -45 dBFS: speech, not silence or hiss. */
  voiced: number;
  /** The longest run of quiet windows (< -45 dBFS) between the first and the last voiced one, ms. */
  longestPauseMs: number;
}

export function speechStats(wav: Buffer): SpeechStats {
  // Imported here so helpers.ts stays loadable without the media modules for the other suites.
  const { decodeWav } = require('../../src/audio/pcm-wav') as typeof import('../../src/audio/pcm-wav');
  const { rate, channels } = decodeWav(wav);
  const x = channels[0];
  const win = Math.round(rate * 0.02);
  const loud: boolean[] = [];
  let sum = 0;
  for (let i = 0; i + win <= x.length; i += win) {
    let e = 0;
    for (let j = i; j < i + win; j++) e += x[j] * x[j];
    sum += e;
    loud.push(10 * Math.log10(e / win + 1e-12) > -45);
  }
  const first = loud.indexOf(true);
  const last = loud.lastIndexOf(true);
  let longest = 0;
  let run = 0;
  for (let i = first; i >= 0 && i <= last; i++) {
    run = loud[i] ? 0 : run + 1;
    longest = Math.max(longest, run);
  }
  return {
    rate,
    seconds: x.length / rate,
    rmsDb: 10 * Math.log10(sum / Math.max(1, x.length) + 1e-12),
    voiced: loud.filter(Boolean).length / Math.max(1, loud.length),
    longestPauseMs: longest * 20,
  };
}
