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
