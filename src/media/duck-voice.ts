import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import type { Logger } from '../logger';
import { redactUrl } from '../redact';
import type { DuckMixer, PcmFormat } from './duck-mix';

type Ffmpeg = ChildProcessByStdio<null, Readable, Readable>;

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
  private proc?: Ffmpeg;
  private stopped = false;
  private stderr = '';

  constructor(private readonly opts: VoiceOptions) {}

  /** Starts the decode into `mixer`; resolves at the first PCM, rejects when there is none (a URL that does not play). */
  start(mixer: DuckMixer): Promise<void> {
    const { url, format, ffmpegPath } = this.opts;
    const codec = format.bits === 16 ? 's16le' : 's32le';
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
      codec,
      '-acodec',
      `pcm_${codec}`,
      '-ar',
      String(format.rate),
      '-ac',
      String(format.channels),
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
      const timer = setTimeout(
        () => settle(new Error(`no audio from the announcement within ${this.opts.startTimeoutMs} ms`)),
        this.opts.startTimeoutMs,
      );
      let proc: Ffmpeg;
      try {
        proc = spawn(ffmpegPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      } catch (e) {
        settle(new Error(`cannot run ffmpeg: ${(e as Error).message}`));
        return;
      }
      this.proc = proc;
      proc.stderr.setEncoding('utf8');
      proc.stderr.on('data', (d: string) => {
        this.stderr = (this.stderr + d).slice(-2000);
      });
      proc.on('error', (e) => settle(new Error(`cannot run ffmpeg (${ffmpegPath}): ${e.message}`)));
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
          this.opts.logger.debug(
            { url: redactUrl(url), stderr: redactUrl(this.stderr.trim().split('\n').pop() ?? '') },
            'the announcement could not be decoded',
          );
          settle(new Error('ffmpeg could not play the media: the media URL could not be fetched or does not serve audio'));
          return;
        }
        // A decode that broke off ends the voice where it broke: the music comes back up.
        if (code !== 0) this.opts.logger.warn({ url: redactUrl(url), code }, 'the announcement decode stopped early');
        mixer.endVoice();
      });
    });
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.proc?.stdout.destroy();
    if (this.proc && this.proc.exitCode === null) this.proc.kill('SIGKILL');
  }
}
