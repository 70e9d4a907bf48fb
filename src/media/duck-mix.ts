/**
 * The ffmpeg filter graph of a ducked announcement (issue 21), for a driver that produces the
 * audio a speaker plays (Snapcast's hub stream; Squeezebox and AirPlay as they land): the
 * music goes on from where it is, fades down by levelDb over fadeMs, the voice plays on top
 * once the music is down, then the music fades back up. The music never stops, so it never
 * loses its place.
 *
 * Not wired into a driver yet: the Snapcast driver still has to feed this mix to the
 * targets' own stream (see README "Announcements", Mode). Kept apart so that the mix itself
 * is tested on real ffmpeg output (test/media/duck-mix.test.ts).
 */

export interface DuckMixOptions {
  /** The music's input as ffmpeg reads it (a URL or a file) and the second to start at. */
  music: { input: string; startAt: number };
  /** The announcement clip (already at the target loudness). */
  voice: { input: string; duration: number };
  /** dB the music goes down (-40..0). */
  levelDb: number;
  /** Fade down before, and up after, the voice, ms. */
  fadeMs: number;
  /** Gain on the voice, dB (the announcement's Volume relative to the speaker's). Default 0. */
  voiceGainDb?: number;
  /** Output sample rate. Default 48000. */
  rate?: number;
}

/** When the music is down and the voice starts, and when the whole mix ends (seconds). */
export function duckTimes(o: Pick<DuckMixOptions, 'voice' | 'fadeMs'>): { voiceAt: number; voiceEnd: number; end: number } {
  const fade = Math.max(0, o.fadeMs) / 1000;
  const voiceAt = fade;
  const voiceEnd = voiceAt + o.voice.duration;
  return { voiceAt, voiceEnd, end: voiceEnd + fade };
}

/** ffmpeg arguments (inputs, filter, -t) that write the mix to whatever output arguments follow. */
export function duckMixArgs(o: DuckMixOptions): string[] {
  const rate = o.rate ?? 48000;
  const { voiceAt, voiceEnd, end } = duckTimes(o);
  const fade = voiceAt;
  const g = 10 ** (Math.max(-40, Math.min(0, o.levelDb)) / 20);
  // Linear gain ramps: 1 → g over [0, fade], g while the voice plays, g → 1 over [voiceEnd, end].
  const down = fade > 0 ? `1-(1-${g})*t/${fade}` : `${g}`;
  const up = fade > 0 ? `${g}+(1-${g})*(t-${voiceEnd})/${fade}` : '1';
  const envelope = `if(lt(t,${fade}),${down},if(lt(t,${voiceEnd}),${g},if(lt(t,${end}),${up},1)))`;
  const format = `aresample=${rate},aformat=sample_fmts=fltp:channel_layouts=stereo`;
  const delayMs = Math.round(voiceAt * 1000);
  const graph = [
    `[0:a:0]${format},asetpts=PTS-STARTPTS,volume='${envelope}':eval=frame[m]`,
    `[1:a:0]${format},volume=${(o.voiceGainDb ?? 0).toFixed(2)}dB,adelay=${delayMs}|${delayMs}[v]`,
    // normalize=0: amix must not scale the inputs down (the music would drop by 6 dB all along).
    `[m][v]amix=inputs=2:duration=first:dropout_transition=0:normalize=0[out]`,
  ].join(';');
  return [
    '-ss',
    o.music.startAt.toFixed(3),
    '-i',
    o.music.input,
    '-i',
    o.voice.input,
    '-filter_complex',
    graph,
    '-map',
    '[out]',
    '-t',
    end.toFixed(3),
  ];
}
