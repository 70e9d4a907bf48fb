import type { Logger } from '../../logger';
import { DuckMixer, type PcmFormat } from '../../audio/duck-mix';
import { DuckVoice } from '../../audio/duck-voice';
import type { DuckRequest, OverlayEnd, OverlayHandle } from '../driver';

/** The PCM an AirPlay stream encodes: what the announcement is decoded to for the mix. */
export const AIRPLAY_PCM: PcmFormat = { rate: 44100, bits: 16, channels: 2 };

/**
 * A ducked announcement mixed into an AirPlay stream's PCM before it is encoded (issue 21):
 * the hub is the RAOP sender, so the voice goes into the very packets every member plays, on
 * the stream's one RTP timeline. The voice is decoded by its own ffmpeg (DuckVoice, as for
 * Snapcast: not paced, bounded by what the mixer holds).
 *
 * Lifecycle: start() resolves at the first voice PCM; the stream runs the mixer on each packet
 * (AirPlayStream.beginDuck); when the music is back at full level in the packets sent, the
 * receivers hear that latencyMs later, and then onOver fires (the announcement has played).
 */
export class AirPlayDuck {
  readonly mixer: DuckMixer;
  private voice?: DuckVoice;
  /** The timer from "music back up in the packets sent" to "heard". */
  ending?: NodeJS.Timeout;
  /** DeviceIDs of the speakers the announcement is for (every member of the stream when it starts). */
  readonly targets = new Set<string>();
  /** The music is back at full level at the receivers. */
  onOver?: () => void;
  /** Each target's overlay handle (SpeakerDriver.overlay): settled when its part is over. */
  private readonly ends = new Map<string, (end: OverlayEnd) => void>();

  constructor(
    private readonly url: string,
    duck: DuckRequest,
    voiceGainDb: number,
    startGain: number,
    private readonly log: Logger,
    private readonly ffmpegPath = 'ffmpeg',
  ) {
    this.mixer = new DuckMixer({ format: AIRPLAY_PCM, levelDb: duck.levelDb, fadeMs: duck.fadeMs, voiceGainDb, startGain });
  }

  /** Starts the voice decode; resolves at its first PCM, rejects when there is none (a URL that does not play). */
  start(timeoutMs: number): Promise<void> {
    this.voice = new DuckVoice({ url: this.url, format: AIRPLAY_PCM, ffmpegPath: this.ffmpegPath, startTimeoutMs: timeoutMs, logger: this.log });
    return this.voice.start(this.mixer);
  }

  /** A target's handle: its end, and stop() (leaves the mix; the last one leaving fades the music back up). */
  handle(speakerId: string): OverlayHandle {
    const ended = new Promise<OverlayEnd>((resolve) => this.ends.set(speakerId, resolve));
    return { ended, stop: async () => this.leave(speakerId) };
  }

  /** A target leaves the mix (stopped, paused, its handle stopped); with the last one, the music fades back up. */
  leave(speakerId: string): void {
    this.end(speakerId, { reason: 'stopped' });
    if (this.targets.delete(speakerId) && !this.targets.size) this.release();
  }

  /** Every target's part is over: heard to its end. */
  over(): void {
    for (const id of [...this.ends.keys()]) this.end(id, { reason: 'ended' });
  }

  private end(speakerId: string, end: OverlayEnd): void {
    const resolve = this.ends.get(speakerId);
    this.ends.delete(speakerId);
    resolve?.(end);
  }

  /** Cuts the voice short (its targets left): the music fades back up from where it is. */
  release(): void {
    this.stop();
    this.mixer.release();
  }

  /** Ends the decode and any pending timer (the stream ended, or another duck took over): parts not yet over end 'stopped'. */
  stop(): void {
    clearTimeout(this.ending);
    this.ending = undefined;
    this.voice?.stop();
    for (const id of [...this.ends.keys()]) this.end(id, { reason: 'stopped' });
  }
}
