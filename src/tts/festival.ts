import { writeFile } from 'node:fs/promises';
import { ChildStopped, runChild } from './child-process';
import { TtsEngineError } from './errors';
import type { TtsProvider } from './provider';
import { SPOKEN_TEXT_REVISION, textForEngine } from './spoken-text';
import { SlotQueue } from './slots';

export interface FestivalOptions {
  /** festival's text2wave script, looked up on PATH unless a path is given. Default 'text2wave'. */
  binaryPath?: string;
  /** The festival voice for English (and for the hub's generic 'en'). Default 'cmu_us_slt_arctic_hts'. */
  voice?: string;
  /** A synthesis still running after this is killed. Default 60 s. */
  timeoutMs?: number;
  /** A synthesis writing more than this (bytes of WAV) is killed. Default 64 MiB (~25 min of speech). */
  maxOutputBytes?: number;
  /**
   * Syntheses running at once. Each is a festival process peaking at ~330 MB (the CMU lexicon
   * and the HTS voice) on one core, so by default one; the others wait their turn (TtsService
   * bounds how many wait: limits.ttsQueue). Default 1.
   */
  maxConcurrent?: number;
}

/** The best English voice Debian has for festival (HTS, female US). */
export const FESTIVAL_DEFAULT_VOICE = 'cmu_us_slt_arctic_hts';
export const FESTIVAL_INSTALL_HINT = 'apt-get install festival festvox-us-slt-hts';

// Festival voices are Scheme functions named voice_<name>: the name goes into the one piece of
// Scheme the hub writes, so it is only ever lower-case letters, digits and underscores.
const FESTIVAL_VOICE = /^[a-z][a-z0-9_]{0,63}$/;
const RIFF_HEADER = 44;
const FESTIVAL_RATE = 22_050;

/**
 * festival (Debian's, through its text2wave script) with an HTS voice: offline, clearer than
 * espeak, slower to start. Writes 22.05 kHz mono WAV. The text goes in on stdin as plain text (text2wave's text mode reads
 * words, never Scheme); the WAV comes back on stdout, capped.
 */
export class FestivalProvider implements TtsProvider {
  readonly name = 'festival';
  readonly format = { ext: 'wav', contentType: 'audio/wav' };
  readonly revision = SPOKEN_TEXT_REVISION;

  private readonly binaryPath: string;
  private readonly voice: string;
  private readonly timeoutMs: number;
  private readonly maxOutputBytes: number;
  private readonly slots: SlotQueue;

  constructor(options: FestivalOptions = {}) {
    this.binaryPath = options.binaryPath ?? 'text2wave';
    this.voice = options.voice ?? FESTIVAL_DEFAULT_VOICE;
    if (!FESTIVAL_VOICE.test(this.voice)) throw new Error(`invalid festival voice "${this.voice}"`);
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.maxOutputBytes = options.maxOutputBytes ?? 64 * 1024 * 1024;
    this.slots = new SlotQueue(options.maxConcurrent ?? 1);
  }

  /** The festival voice for a hub voice: a language tag means the configured voice. */
  voiceFor(voice: string): string {
    const asked = voice.split(':')[0].trim();
    if (!asked || /^en(?:$|[-_])/i.test(asked)) return this.voice;
    if (FESTIVAL_VOICE.test(asked) && asked.includes('_')) return asked;
    throw new TtsEngineError(
      'TtsVoiceInvalid',
      `"${voice}" is not a festival voice: use an English language tag (en, en-us) or a festival voice name such as ${FESTIVAL_DEFAULT_VOICE}`,
    );
  }

  async synthesize(text: string, voice: string, outFile: string, signal?: AbortSignal): Promise<void> {
    const festivalVoice = this.voiceFor(voice);
    const { wav } = await this.slots.run(() => this.render(textForEngine(text, festivalVoice, 'festival'), festivalVoice, signal));
    await writeFile(outFile, wav);
  }

  /**
   * Runs text2wave once on text as the engine gets it; resolves with a complete WAV and the ms
   * until festival's first byte of output (the bench's time to first audio).
   */
  async render(text: string, festivalVoice: string, signal?: AbortSignal): Promise<{ wav: Buffer; firstOutputMs?: number }> {
    // 22.05 kHz, the rate of espeak's speech and the chime: an announcement clip joins them
    // without ffmpeg (the HTS voice speaks at 32 kHz; speech loses nothing a speaker would play).
    const args = ['-eval', `(voice_${festivalVoice})`, '-F', String(FESTIVAL_RATE), '-o', '-'];
    const result = await runChild(this.binaryPath, args, text, this.timeoutMs, { maxStdoutBytes: this.maxOutputBytes, signal }).catch(
      (e: NodeJS.ErrnoException) => {
        if (e.code === 'ENOENT') {
          // text2wave is a festival script: a missing festival is the same ENOENT.
          throw new TtsEngineError(
            'TtsEngineMissing',
            `festival is not installed (${this.binaryPath} not found); install it: ${FESTIVAL_INSTALL_HINT}`,
            {
              cause: e,
            },
          );
        }
        if (e instanceof ChildStopped && e.reason === 'aborted') throw new TtsEngineError('TtsAborted', e.message, { cause: e });
        throw new TtsEngineError('TtsEngineFailed', `festival: ${e.message}`, { cause: e });
      },
    );
    // festival reports Scheme errors (an unknown voice among them) on stderr and still exits 0.
    if (/unbound variable\s*:\s*voice_/.test(result.stderr)) {
      throw new TtsEngineError(
        'TtsVoiceMissing',
        `the festival voice ${festivalVoice} is not installed${festivalVoice === FESTIVAL_DEFAULT_VOICE ? `; install it: ${FESTIVAL_INSTALL_HINT}` : ''}`,
      );
    }
    if (result.code !== 0 || /SIOD ERROR/.test(result.stderr)) {
      const why = result.stderr || (result.signal ? `killed by ${result.signal}` : `exit code ${result.code}`);
      throw new TtsEngineError('TtsEngineFailed', `festival failed: ${why}`);
    }
    return { wav: completeWav(result.stdout ?? Buffer.alloc(0)), firstOutputMs: result.firstOutputMs };
  }
}

/**
 * text2wave writes its header first with the sizes unknown, then seeks back to fill them in;
 * on a pipe that seek fails and the finished header lands after the audio. Drops that copy
 * and fills the sizes in where they belong.
 */
export function completeWav(out: Buffer): Buffer {
  if (out.length <= RIFF_HEADER || out.toString('latin1', 0, 4) !== 'RIFF' || out.toString('latin1', 36, 40) !== 'data') {
    throw new TtsEngineError('TtsEngineFailed', 'festival wrote no audio');
  }
  let end = out.length;
  const tail = end - RIFF_HEADER;
  // The trailing header is recognised exactly: RIFF…WAVE, and its data size is the audio's.
  if (tail > RIFF_HEADER && out.toString('latin1', tail, tail + 4) === 'RIFF' && out.readUInt32LE(tail + 40) === tail - RIFF_HEADER) {
    end = tail;
  }
  const wav = Buffer.from(out.subarray(0, end));
  if (end === RIFF_HEADER) throw new TtsEngineError('TtsEngineFailed', 'festival wrote no audio');
  wav.writeUInt32LE(end - 8, 4);
  wav.writeUInt32LE(end - RIFF_HEADER, 40);
  return wav;
}
