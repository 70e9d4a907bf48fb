import type { DuckRequest } from '../driver';
import { DuckMixer } from '../../audio/duck-mix';
import { bytesPerSecond, type Feed, type SampleFormat } from './feeder';
import type { FeedSetup } from './hub-stream';

/** Music waiting to be mixed, at most (seconds): a copy that is not taken in time is dropped, oldest first. */
const MUSIC_QUEUE_S = 1;
/**
 * The copy of the music starts this far behind the music's own stream (the tap replays what was
 * just handed over): the two feeds are paced apart, and the music's feed pauses while snapserver
 * is slow to read its pipe (seen under load: a 100 ms hole in the announced client's music, with
 * nothing in any log). Coming back to the music, the client skips these 200 ms, inside the ~1 s a
 * snapclient is deaf while it changes streams.
 */
const MUSIC_BEHIND_MS = 200;

export interface DuckOverlayOptions {
  /** Taps the music's PCM as the hub hands it to snapserver (HubStream.tapMusic). */
  tapMusic: (fn: (pcm: Buffer) => void, replayMs: number) => (() => void) | undefined;
  format: SampleFormat;
  duck: DuckRequest;
  voiceGainDb: number;
  /** The music's short-term loudness (LUFS) as the announcement starts (HubStream.musicLufs): the voice is placed relative to it. */
  musicLufs?: number;
  /** The announcement's length (seconds), when known: the music fades back up after it. */
  voiceSeconds?: number;
}

/**
 * A ducked announcement for some of the clients of a stream (issue 21): they move to the
 * announcement stream, whose feed decodes the announcement as an interrupting one would, and
 * mixes into it a copy of the music as the hub hands it to the music's stream, ducked (the
 * others go on hearing the music unchanged). The copy is taken piece by piece as it goes out,
 * so both streams carry the same music at the same moment and the clients go back to the
 * music in step. The feed is padded by the fade, over which the music comes back up.
 */
export function duckOverlaySetup(o: DuckOverlayOptions): FeedSetup {
  const frameBytes = (o.format.bits / 8) * o.format.channels;
  const bps = bytesPerSecond(o.format);
  const voiceBytes = o.voiceSeconds !== undefined ? Math.floor((o.voiceSeconds * bps) / frameBytes) * frameBytes : Infinity;
  return {
    padMs: o.duck.fadeMs,
    install(feed: Feed) {
      const queue: Buffer[] = [];
      let queued = 0;
      const max = MUSIC_QUEUE_S * bps;
      const untap = o.tapMusic((pcm) => {
        queue.push(pcm);
        queued += pcm.length;
        while (queued > max && queue.length) queued -= queue.shift()!.length;
      }, MUSIC_BEHIND_MS);
      /** `n` bytes of music: what was copied, silence where the copy falls short (the music's feed stalled or ended). */
      const take = (n: number): Buffer => {
        const out = Buffer.alloc(n);
        let at = 0;
        while (at < n && queue.length) {
          const head = queue[0];
          const k = Math.min(head.length, n - at);
          head.copy(out, at, 0, k);
          at += k;
          queued -= k;
          if (k === head.length) queue.shift();
          else queue[0] = head.subarray(k);
        }
        return out;
      };
      const mixer = new DuckMixer({
        format: o.format,
        levelDb: o.duck.levelDb,
        fadeMs: o.duck.fadeMs,
        voiceGainDb: o.voiceGainDb,
        ...(o.musicLufs !== undefined ? { musicLufs: o.musicLufs } : {}),
        // The voice comes one piece at a time, right before the music it goes with.
        maxVoiceBytes: Number.MAX_SAFE_INTEGER,
      });
      let pushed = 0;
      feed.setMix(
        (voice) => {
          // The feed's own PCM is the announcement, then the silence padded after it.
          const keep = Math.min(voice.length, Math.max(0, voiceBytes - pushed));
          if (keep > 0) mixer.pushVoice(voice.subarray(0, keep));
          pushed += keep;
          if (pushed >= voiceBytes) mixer.endVoice();
          return mixer.process(take(voice.length));
        },
        () => untap?.(),
      );
    },
  };
}
