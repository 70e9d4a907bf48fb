import { access } from 'node:fs/promises';
import { runChild } from './child-process';
import { synthesizeWasm } from './espeak-wasm';
import type { TtsProvider } from './provider';

export type EspeakMode = 'auto' | 'binary' | 'wasm';

export interface EspeakOptions {
  /** 'auto' (default) uses the system binary when it runs, else the WebAssembly build. */
  mode?: EspeakMode;
  /** The espeak-ng program, looked up on PATH unless a path is given. Default 'espeak-ng'. */
  binaryPath?: string;
  /** A synthesis still running after this is killed. Default 60 s. */
  timeoutMs?: number;
  /** Syntheses running at once; each WebAssembly one is a node process peaking at ~120 MB. Default 2. */
  maxConcurrent?: number;
}

// espeak voice names: 'en', 'en-us', 'de', 'en-us+f3', 'mb/mb-de1'. Anything else is refused
// rather than handed to the program.
const VOICE = /^[A-Za-z0-9][A-Za-z0-9_+\-/]*$/;

/** espeak-ng: offline, small, robotic. Writes 22.05 kHz mono WAV. */
export class EspeakProvider implements TtsProvider {
  readonly name = 'espeak';
  readonly format = { ext: 'wav', contentType: 'audio/wav' };

  private readonly mode: EspeakMode;
  private readonly binaryPath: string;
  private readonly timeoutMs: number;
  private readonly maxConcurrent: number;
  private binaryWorks?: Promise<boolean>;
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(options: EspeakOptions = {}) {
    this.mode = options.mode ?? 'auto';
    this.binaryPath = options.binaryPath ?? 'espeak-ng';
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.maxConcurrent = Math.max(1, options.maxConcurrent ?? 2);
  }

  /** Which engine synthesize() uses; 'auto' probes the binary once. */
  async resolvedMode(): Promise<'binary' | 'wasm'> {
    if (this.mode !== 'auto') return this.mode;
    this.binaryWorks ??= this.probeBinary();
    return (await this.binaryWorks) ? 'binary' : 'wasm';
  }

  async synthesize(text: string, voice: string, outFile: string): Promise<void> {
    // Voices may be written VoiceRSS-style ('en-us:Linda'); espeak only understands the language part.
    const espeakVoice = voice.split(':')[0].trim() || 'en';
    if (!VOICE.test(espeakVoice)) throw new Error(`invalid espeak voice "${voice}"`);
    const mode = await this.resolvedMode();
    await this.withSlot(() =>
      mode === 'binary' ? this.synthesizeBinary(text, espeakVoice, outFile) : synthesizeWasm(text, espeakVoice, outFile, this.timeoutMs),
    );
    // espeak exits 0 without writing anything when there is nothing to say.
    await access(outFile).catch(() => {
      throw new Error('espeak-ng wrote no audio');
    });
  }

  private async synthesizeBinary(text: string, voice: string, outFile: string): Promise<void> {
    // Text on stdin: no shell, no length limit of argv, and a text starting with '-' is never an option.
    const args = ['--stdin', '-b', '1', '-v', voice, '-w', outFile];
    const result = await runChild(this.binaryPath, args, text, this.timeoutMs).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') {
        throw new Error(`espeak-ng binary not found (${this.binaryPath}); install espeak-ng or use espeak mode 'wasm'`);
      }
      throw e;
    });
    if (result.code !== 0) {
      const why = result.stderr || (result.signal ? `killed by ${result.signal}` : `exit code ${result.code}`);
      throw new Error(`espeak-ng failed: ${why}`);
    }
  }

  private async probeBinary(): Promise<boolean> {
    try {
      const result = await runChild(this.binaryPath, ['--version'], '', 10_000);
      return result.code === 0;
    } catch {
      return false;
    }
  }

  private async withSlot<T>(fn: () => Promise<T>): Promise<T> {
    while (this.active >= this.maxConcurrent) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.active++;
    try {
      return await fn();
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }
}
