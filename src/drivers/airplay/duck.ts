import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import type { Logger } from '../../logger';
import { DuckMixer, type PcmFormat } from '../../media/duck-mix';
import type { DuckRequest } from '../driver';

type Ffmpeg = ChildProcessByStdio<null, Readable, Readable>;

/** The PCM an AirPlay stream encodes: what the announcement is decoded to for the mix. */
export const AIRPLAY_PCM: PcmFormat = { rate: 44100, bits: 16, channels: 2 };

/** A URL for the log: no query (it may carry a capability token). */
function logUrl(url: string): string {
  return url.replace(/\?.*$/, '?…');
}

/**
 * A ducked announcement mixed into an AirPlay stream's PCM before it is encoded (issue 21):
 * the hub is the RAOP sender, so the voice goes into the very packets every member plays, on
 * the stream's one RTP timeline. The voice is decoded by its own ffmpeg (not paced: the mixer
 * takes it as fast as the music flows, and the decode pauses while the mixer holds enough —
 * bounded memory whatever the clip's length).
 *
 * Lifecycle: start() resolves at the first voice PCM; the stream runs the mixer on each packet
 * (AirPlayStream.beginDuck); when the music is back at full level in the packets sent, the
 * receivers hear that latencyMs later, and then onOver fires (the announcement has played).
 */
export class AirPlayDuck {
  readonly mixer: DuckMixer;
  private proc?: Ffmpeg;
  private stopped = false;
  private stderr = '';
  /** The timer from "music back up in the packets sent" to "heard". */
  ending?: NodeJS.Timeout;
  /** DeviceIDs of the speakers the announcement is for (every member of the stream when it starts). */
  readonly targets = new Set<string>();
  /** The music is back at full level at the receivers. */
  onOver?: () => void;

  constructor(
    private readonly url: string,
    duck: DuckRequest,
    voiceGainDb: number,
    startGain: number,
    private readonly log: Logger,
  ) {
    this.mixer = new DuckMixer({ format: AIRPLAY_PCM, levelDb: duck.levelDb, fadeMs: duck.fadeMs, voiceGainDb, startGain });
  }

  /** Starts the voice decode; resolves at its first PCM, rejects when there is none (a URL that does not play). */
  start(timeoutMs: number): Promise<void> {
    const { url, mixer } = this;
    const args = [
      '-hide_banner',
      '-nostdin',
      '-loglevel',
      'error',
      ...(/^https?:/i.test(url) ? ['-rw_timeout', '15000000'] : []),
      '-i',
      url,
      '-vn',
      '-sn',
      '-dn',
      '-f',
      's16le',
      '-acodec',
      'pcm_s16le',
      '-ar',
      String(AIRPLAY_PCM.rate),
      '-ac',
      String(AIRPLAY_PCM.channels),
      'pipe:1',
    ];
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const settle = (error?: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (error) {
          this.stop();
          reject(error);
        } else resolve();
      };
      const timer = setTimeout(() => settle(new Error(`no audio from the announcement within ${timeoutMs} ms`)), timeoutMs);
      let proc: Ffmpeg;
      try {
        proc = spawn('ffmpeg', args, { stdio: ['ignore', 'pipe', 'pipe'] });
      } catch (e) {
        settle(new Error(`cannot run ffmpeg: ${(e as Error).message}`));
        return;
      }
      this.proc = proc;
      proc.stderr.setEncoding('utf8');
      proc.stderr.on('data', (d: string) => {
        this.stderr = (this.stderr + d).slice(-2000);
      });
      proc.on('error', (e) => settle(new Error(`cannot run ffmpeg: ${e.message}`)));
      mixer.onVoiceRoom = () => {
        if (!this.stopped) proc.stdout.resume();
      };
      proc.stdout.on('data', (chunk: Buffer) => {
        if (this.stopped) return;
        mixer.pushVoice(chunk);
        if (mixer.voiceFull) proc.stdout.pause();
        settle();
      });
      proc.on('close', (code) => {
        if (this.stopped) return;
        if (!settled) {
          this.log.debug({ url: logUrl(url), stderr: this.stderr.trim().split('\n').pop() ?? '' }, 'the announcement could not be decoded');
          settle(new Error('ffmpeg could not play the media: the media URL could not be fetched or does not serve audio'));
          return;
        }
        // A decode that broke off ends the voice where it broke: the music comes back up.
        if (code !== 0) this.log.warn({ url: logUrl(url), code }, 'the announcement decode stopped early');
        mixer.endVoice();
      });
    });
  }

  /** Cuts the voice short (its targets left): the music fades back up from where it is. */
  release(): void {
    this.stop();
    this.mixer.release();
  }

  /** Ends the decode and any pending timer (the stream ended, or another duck took over). */
  stop(): void {
    clearTimeout(this.ending);
    this.ending = undefined;
    if (this.stopped) return;
    this.stopped = true;
    this.proc?.stdout.destroy();
    if (this.proc && this.proc.exitCode === null) this.proc.kill('SIGKILL');
  }
}
