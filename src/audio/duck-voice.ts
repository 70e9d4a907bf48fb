import type { Logger } from '../logger';
import { redactUrl } from '../redact';
import type { DuckMixer, PcmFormat } from './duck-mix';
import { PcmDecoder } from './pcm-decoder';
import { pcmSourceFor, type PcmSource } from './wav-pcm-decoder';

export interface VoiceOptions {
  url: string;
  format: PcmFormat;
  ffmpegPath: string;
  startTimeoutMs: number;
  logger: Logger;
  /** The announcement's content type, when known (with `clip`: a WAV is converted in process). */
  contentType?: string;
  /**
   * Convert a WAV announcement clip in process (pcmSourceFor) instead of spawning ffmpeg: a
   * spawn (a fork of the whole hub process) blocked the event loop 70-260 ms at the chime on a
   * busy machine, longer than the PCM a Snapcast feed keeps ahead of snapserver, which then
   * re-synced its clients (issue 30). Anything not a plain WAV still goes to ffmpeg.
   */
  clip?: boolean;
}

/**
 * The announcement's audio, decoded to the music's PCM format for a DuckMixer (the Snapcast
 * feed's format, AirPlay's 44.1 kHz s16 stereo). Not paced
 * (-re): the mixer takes it as fast as the music flows, and the decoder pauses while the
 * mixer holds as much as it wants (bounded memory whatever the clip's length).
 */
export class DuckVoice {
  private decoder?: PcmSource;
  private stopped = false;

  constructor(private readonly opts: VoiceOptions) {}

  /** Starts the decode into `mixer`; resolves at the first PCM, rejects when there is none (a URL that does not play). */
  start(mixer: DuckMixer): Promise<void> {
    const o = { ...this.opts, what: 'the announcement' };
    const decoder = (this.decoder = this.opts.clip ? pcmSourceFor(o) : new PcmDecoder(o));
    mixer.onVoiceRoom = () => {
      if (!this.stopped) decoder.resume();
    };
    return decoder.start({
      data: (chunk) => {
        mixer.pushVoice(chunk);
        if (mixer.voiceFull) decoder.pause();
        return true;
      },
      end: (failure) => {
        // A decode that broke off ends the voice where it broke: the music comes back up.
        if (failure !== undefined) this.opts.logger.warn({ url: redactUrl(this.opts.url), cause: failure }, 'the announcement decode stopped early');
        mixer.endVoice();
      },
    });
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.decoder?.stop();
  }
}
