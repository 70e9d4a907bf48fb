import type { Logger } from '../logger';
import { redactUrl } from '../redact';
import type { DuckMixer, PcmFormat } from './duck-mix';
import { PcmDecoder } from './pcm-decoder';

export interface VoiceOptions {
  url: string;
  format: PcmFormat;
  ffmpegPath: string;
  startTimeoutMs: number;
  logger: Logger;
}

/**
 * The announcement's audio, decoded to the music's PCM format for a DuckMixer (the Snapcast
 * feed's format, AirPlay's 44.1 kHz s16 stereo). Not paced
 * (-re): the mixer takes it as fast as the music flows, and the decoder pauses while the
 * mixer holds as much as it wants (bounded memory whatever the clip's length).
 */
export class DuckVoice {
  private decoder?: PcmDecoder;
  private stopped = false;

  constructor(private readonly opts: VoiceOptions) {}

  /** Starts the decode into `mixer`; resolves at the first PCM, rejects when there is none (a URL that does not play). */
  start(mixer: DuckMixer): Promise<void> {
    const decoder = (this.decoder = new PcmDecoder({ ...this.opts, what: 'the announcement' }));
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
