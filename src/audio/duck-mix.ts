/**
 * The ffmpeg filter graph of a ducked announcement (issue 21), for a driver that produces the
 * audio a speaker plays (Snapcast's hub stream; Squeezebox and AirPlay as they land): the
 * music goes on from where it is, fades down by levelDb over fadeMs, the voice plays on top
 * once the music is down, then the music fades back up. The music never stops, so it never
 * loses its place.
 *
 * Two forms: duckMixArgs, an ffmpeg graph over a music file or URL (tested on real ffmpeg
 * output, test/audio/duck-mix.lab.test.ts), and DuckMixer, the same envelope applied to PCM that
 * is already flowing. Snapcast uses DuckMixer: the music is the hub's own running decode, so
 * mixing into its PCM on the way to snapserver keeps every sample in place (nothing is
 * decoded twice, nothing restarts) and costs a multiply-add per sample.
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

/** Raw PCM as a stream carries it: signed little-endian integers, interleaved channels. */
export interface PcmFormat {
  rate: number;
  bits: 16 | 32;
  channels: number;
}

export interface DuckMixerOptions {
  format: PcmFormat;
  /** dB the music goes down (-40..0). */
  levelDb: number;
  /** Fade down before, and up after, the voice, ms. */
  fadeMs: number;
  /** Gain on the voice, dB. Default 0. */
  voiceGainDb?: number;
  /** Music gain when the mix starts (a duck taking over from another one already down). Default 1. */
  startGain?: number;
  /** Most voice PCM held ahead of the music, bytes; the decoder is paused above it (see voiceFull). */
  maxVoiceBytes?: number;
  /**
   * The music's short-term loudness (LUFS) when the voice starts (MusicLoudness): the voice is
   * then placed relative to the ducked music (voicePlacementDb), voiceGainDb on top. Without
   * it the voice plays at the clip's own level, as before.
   */
  musicLufs?: number;
  /** The clip's normalised loudness (LUFS). Default ANNOUNCEMENT_LUFS. */
  voiceLufs?: number;
}

/** The loudness announcement clips are normalised to (LUFS; src/audio/loudness-file.ts DEFAULT_LOUDNESS). */
export const ANNOUNCEMENT_LUFS = -16;
/**
 * Where a ducked voice sits (issue 21): at least this many LU above the ducked music, as
 * broadcasters keep speech over a ducked bed (some +6…+10 LU: clearly on top, not shouting).
 */
export const VOICE_OVER_BED_LU = 8;
/**
 * …and never below the music's own loudness plus this (LU): the level it has over a bed at
 * the default DuckLevel (-15 + 8). A deeper duck lowers the music under the voice, it does not
 * lower the voice with it (a listener asking for -25 wants the speech clearer, not quieter).
 */
export const VOICE_UNDER_MUSIC_LU = -7;
/** The voice is never raised more than this above the clip's normalised level (dB): headroom, its true peak is -1.5 dBTP. */
export const VOICE_MAX_BOOST_DB = 3;
/** Nor lowered more than this below it (dB): quiet or silent music still leaves the voice plainly audible. */
export const VOICE_MAX_CUT_DB = -12;

/**
 * The voice's gain (dB, relative to the clip as rendered) for music of short-term loudness
 * musicLufs ducked by levelDb: the voice at max(music + VOICE_UNDER_MUSIC_LU, ducked music +
 * VOICE_OVER_BED_LU), within [VOICE_MAX_CUT_DB, VOICE_MAX_BOOST_DB] of the clip's level. So
 * loud music gets a louder voice and quiet music a quieter one, dB for dB, inside the clamps.
 * Music too quiet to measure (silence, under R128's -70 LUFS gate, or not measured yet)
 * counts as quiet: the floor.
 */
export function voicePlacementDb(musicLufs: number, levelDb: number, voiceLufs = ANNOUNCEMENT_LUFS): number {
  if (!Number.isFinite(musicLufs)) return VOICE_MAX_CUT_DB;
  const level = Math.max(-40, Math.min(0, levelDb));
  const want = musicLufs + Math.max(VOICE_UNDER_MUSIC_LU, level + VOICE_OVER_BED_LU) - voiceLufs;
  return Math.max(VOICE_MAX_CUT_DB, Math.min(VOICE_MAX_BOOST_DB, want));
}

/** Where a mixer with these options places the voice (dB, relative to the clip): voicePlacementDb, or 0 without the music's loudness. */
export function mixPlacementDb(opts: Pick<DuckMixerOptions, 'musicLufs' | 'levelDb' | 'voiceLufs'>): number {
  return opts.musicLufs !== undefined ? voicePlacementDb(opts.musicLufs, opts.levelDb, opts.voiceLufs) : 0;
}

/** down: the voice starts and the music fades to the duck level under it; voice: the voice plays over the lowered music; up: the music fades back; done: full level again. */
export type DuckPhase = 'down' | 'voice' | 'up' | 'done';

/** A duck's gain in dB, bounded as DuckLevel is. */
export function duckGain(levelDb: number): number {
  return 10 ** (Math.max(-40, Math.min(0, levelDb)) / 20);
}

/**
 * The voice's gain when an announcement asks for a Volume (0–50) on a speaker whose own volume
 * (0–50) stays where it is for the music: the ratio of the two, in dB, bounded so that a
 * speaker at 1 does not push the voice into clipping. Without a Volume the voice plays as
 * rendered (the clip is already at the target loudness).
 */
export function voiceGainDb(voiceVolume: number | undefined, speakerVolume: number): number {
  if (voiceVolume === undefined) return 0;
  const ratio = Math.max(1, voiceVolume) / Math.max(1, speakerVolume);
  return Math.max(-30, Math.min(12, 20 * Math.log10(ratio)));
}

/**
 * Mixes a voice into music PCM as it flows by, with the duck envelope: the voice starts at
 * once and the music fades from startGain to the duck level under it over fadeMs, as a
 * broadcast ducker keyed by the voice does (waiting for the fade first would make every
 * ducked announcement fadeMs later than an interrupting one; the announcement clip's chime,
 * when it has one, is what plays over the fade); when the voice has ended the music fades
 * back up. Chunks
 * must hold whole frames (the caller aligns them). Bounded: the voice waits in at most
 * maxVoiceBytes (voiceFull tells the decoder to pause).
 */
export class DuckMixer {
  private readonly voice: Buffer[] = [];
  private voiceBytes = 0;
  private voiceDone = false;
  private _phase: DuckPhase = 'down';
  /** Frames into the current phase. */
  private frames = 0;
  private readonly fadeFrames: number;
  private readonly duck: number;
  private readonly voiceGain: number;
  /** dB the voice was placed at relative to the music's loudness (0 without musicLufs), before voiceGainDb. */
  readonly placementDb: number;
  private readonly bytes: 2 | 4;
  private readonly maxVoiceBytes: number;
  private _gain: number;
  private readonly from: number;
  private voiceStarted = false;
  /** Music frames mixed so far, and where the voice started and ended (frames), for who measures. */
  private mixed = 0;
  voiceStartFrame?: number;
  voiceEndFrame?: number;
  /** Called (once) when the voice starts, and when the music is back at full level. */
  onVoiceStart?: () => void;
  onDone?: () => void;
  /** Called when voice PCM was taken and there is room again (a paused decoder may go on). */
  onVoiceRoom?: () => void;

  constructor(private readonly opts: DuckMixerOptions) {
    this.fadeFrames = Math.round((Math.max(0, opts.fadeMs) / 1000) * opts.format.rate);
    this.duck = duckGain(opts.levelDb);
    this.placementDb = mixPlacementDb(opts);
    this.voiceGain = 10 ** ((this.placementDb + (opts.voiceGainDb ?? 0)) / 20);
    this.bytes = opts.format.bits === 16 ? 2 : 4;
    this.from = Math.max(0, Math.min(1, opts.startGain ?? 1));
    this._gain = this.from;
    this.maxVoiceBytes = opts.maxVoiceBytes ?? opts.format.rate * opts.format.channels * this.bytes * 4;
  }

  get phase(): DuckPhase {
    return this._phase;
  }

  /** The music's gain now (linear). */
  get gain(): number {
    return this._gain;
  }

  /** More voice is not wanted now: the decoder should pause until onVoiceRoom. */
  get voiceFull(): boolean {
    return this.voiceBytes >= this.maxVoiceBytes;
  }

  /** Voice PCM in the music's format. */
  pushVoice(chunk: Buffer): void {
    if (this.voiceDone || !chunk.length) return;
    this.voice.push(chunk);
    this.voiceBytes += chunk.length;
  }

  /** The voice has no more PCM: once what is held has played, the music comes back up. */
  endVoice(): void {
    this.voiceDone = true;
  }

  /** Cuts the voice short: the music fades back up from where it is. */
  release(): void {
    this.voice.length = 0;
    this.voiceBytes = 0;
    this.voiceDone = true;
    if (this._phase === 'down' || this._phase === 'voice') this.enter('up');
  }

  /** The music chunk with the envelope applied and the voice added (a new buffer; the input is left alone). */
  process(music: Buffer): Buffer {
    const { channels } = this.opts.format;
    const frameBytes = channels * this.bytes;
    const out = Buffer.from(music);
    const total = Math.floor(out.length / frameBytes);
    const max = this.bytes === 2 ? 32767 : 2147483647;
    const min = -max - 1;
    let voice = this.voice[0];
    let voiceAt = 0;
    let took = false;
    for (let f = 0; f < total; f++) {
      const gain = this.step();
      const mixing = this._phase === 'voice' || this._phase === 'down';
      if (mixing && voice === undefined && this.voice.length) voice = this.voice[0];
      if (mixing && voice && !this.voiceStarted) {
        this.voiceStarted = true;
        this.voiceStartFrame = this.mixed;
        this.onVoiceStart?.();
      }
      const base = f * frameBytes;
      for (let c = 0; c < channels; c++) {
        const o = base + c * this.bytes;
        let v = (this.bytes === 2 ? out.readInt16LE(o) : out.readInt32LE(o)) * gain;
        if (mixing && voice) {
          v += (this.bytes === 2 ? voice.readInt16LE(voiceAt + c * 2) : voice.readInt32LE(voiceAt + c * 4)) * this.voiceGain;
        }
        const s = v > max ? max : v < min ? min : Math.round(v);
        if (this.bytes === 2) out.writeInt16LE(s, o);
        else out.writeInt32LE(s, o);
      }
      if (mixing && voice) {
        voiceAt += frameBytes;
        if (voiceAt + frameBytes > voice.length) {
          this.voiceBytes -= voice.length;
          this.voice.shift();
          took = true;
          voiceAt = 0;
          voice = this.voice[0];
        }
      }
      if (mixing && !voice && this.voiceDone && this.voiceStarted) {
        this.voiceEndFrame = this.mixed + 1;
        this.enter('up');
      }
      this.mixed++;
    }
    // What is left of the first voice buffer stays for the next chunk.
    if (voiceAt > 0 && this.voice.length) {
      this.voiceBytes -= voiceAt;
      this.voice[0] = this.voice[0].subarray(voiceAt);
      took = true;
    }
    if (took && !this.voiceFull) this.onVoiceRoom?.();
    return out;
  }

  /** Advances the envelope by one frame; the music gain for it. */
  private step(): number {
    switch (this._phase) {
      case 'down':
        if (this.frames >= this.fadeFrames) {
          this._gain = this.duck;
          // Down: the voice goes on (a voice whose PCM is late keeps the music down, waiting for it).
          if (this.voiceDone && !this.voice.length) this.enter('up');
          else this.enter('voice');
          return this._gain;
        }
        this._gain = this.from + ((this.duck - this.from) * this.frames) / Math.max(1, this.fadeFrames);
        this.frames++;
        return this._gain;
      case 'voice':
        return this._gain;
      case 'up':
        if (this.frames >= this.fadeFrames) {
          this.enter('done');
          return 1;
        }
        this._gain = this.duck + ((1 - this.duck) * this.frames) / Math.max(1, this.fadeFrames);
        this.frames++;
        return this._gain;
      default:
        return 1;
    }
  }

  private enter(phase: DuckPhase): void {
    const from = this._gain;
    this._phase = phase;
    this.frames = 0;
    if (phase === 'up' && from < 1) {
      // Coming up from wherever the music is (a voice cut short mid-fade): start the ramp there.
      this.frames = Math.round(((from - this.duck) / Math.max(1e-9, 1 - this.duck)) * this.fadeFrames);
      if (this.frames < 0) this.frames = 0;
    }
    if (phase === 'done') {
      this._gain = 1;
      this.onDone?.();
    }
  }
}
