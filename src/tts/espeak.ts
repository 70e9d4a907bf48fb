import { access } from 'node:fs/promises';
import { ChildStopped, runChild } from './child-process';
import { TtsEngineError } from './errors';
import { synthesizeWasm } from './espeak-wasm';
import type { TtsProvider } from './provider';
import { SlotQueue } from './slots';
import { SPOKEN_TEXT_REVISION, textForEngine } from './spoken-text';

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
  readonly revision = SPOKEN_TEXT_REVISION;

  private readonly mode: EspeakMode;
  private readonly binaryPath: string;
  private readonly timeoutMs: number;
  private readonly slots: SlotQueue;
  private binaryWorks?: Promise<boolean>;

  constructor(options: EspeakOptions = {}) {
    this.mode = options.mode ?? 'auto';
    this.binaryPath = options.binaryPath ?? 'espeak-ng';
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.slots = new SlotQueue(options.maxConcurrent ?? 2);
  }

  /** Which engine synthesize() uses; 'auto' probes the binary once. */
  async resolvedMode(): Promise<'binary' | 'wasm'> {
    if (this.mode !== 'auto') return this.mode;
    this.binaryWorks ??= this.probeBinary();
    return (await this.binaryWorks) ? 'binary' : 'wasm';
  }

  async synthesize(text: string, voice: string, outFile: string, signal?: AbortSignal): Promise<void> {
    // Voices may be written VoiceRSS-style ('en-us:Linda'); espeak only understands the language part.
    const espeakVoice = voice.split(':')[0].trim() || 'en';
    if (!VOICE.test(espeakVoice)) throw new TtsEngineError('TtsVoiceInvalid', `invalid espeak voice "${voice}"`);
    const spoken = textForEngine(text, espeakVoice, 'espeak');
    const mode = await this.resolvedMode();
    await this.slots
      .run(() =>
        mode === 'binary'
          ? this.synthesizeBinary(spoken, espeakVoice, outFile, signal)
          : synthesizeWasm(spoken, espeakVoice, outFile, this.timeoutMs, signal),
      )
      .catch((e: unknown) => {
        if (e instanceof ChildStopped && e.reason === 'aborted') throw new TtsEngineError('TtsAborted', e.message, { cause: e });
        throw e;
      });
    // espeak exits 0 without writing anything when there is nothing to say.
    await access(outFile).catch(() => {
      throw new Error('espeak-ng wrote no audio');
    });
  }

  private async synthesizeBinary(text: string, voice: string, outFile: string, signal?: AbortSignal): Promise<void> {
    // Text on stdin: no shell, no length limit of argv, and a text starting with '-' is never an option.
    const args = ['--stdin', '-b', '1', '-v', voice, '-w', outFile];
    const result = await runChild(this.binaryPath, args, text, this.timeoutMs, { signal }).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') {
        throw new TtsEngineError('TtsEngineMissing', `espeak-ng binary not found (${this.binaryPath}); install espeak-ng or use espeak mode 'wasm'`, {
          cause: e,
        });
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
}
