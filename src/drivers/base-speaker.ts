import { EventEmitter } from 'node:events';
import { clampVolume } from '../core/volume-range';
import type { MediaRequest, Speaker, SpeakerEvents, SpeakerInfo, SpeakerPlayState, StopReason } from './driver';

/**
 * The bookkeeping every speaker needs, whatever its protocol: the reported availability, play
 * state, volume and descriptive fields, each emitted as its event only when it changes. A
 * driver's speaker extends this and implements the protocol: play/pause/resume/stop,
 * position, setVolume (and the optional mute/snapshot/restore parts of Speaker).
 */
export abstract class BaseSpeaker extends EventEmitter<SpeakerEvents> implements Speaker {
  private _available: boolean;
  private _state: SpeakerPlayState = 'stopped';
  private _volume: number;
  private _info: SpeakerInfo;

  constructor(
    readonly id: string,
    readonly driver: string,
    info: SpeakerInfo,
    options: { volume?: number; available?: boolean } = {},
  ) {
    super();
    this._info = { ...info };
    this._volume = clampVolume(options.volume ?? 0);
    this._available = options.available ?? true;
  }

  get available(): boolean {
    return this._available;
  }
  get state(): SpeakerPlayState {
    return this._state;
  }
  /** 0–50, as last reported by the speaker (or set by the hub). */
  get volume(): number {
    return this._volume;
  }
  info(): SpeakerInfo {
    return { ...this._info };
  }

  abstract play(media: MediaRequest): Promise<void>;
  abstract pause(): Promise<void>;
  abstract resume(): Promise<void>;
  abstract stop(): Promise<void>;
  abstract position(): number | undefined;
  abstract setVolume(volume: number): Promise<void>;

  /**
   * The speaker came or went; emits availability on a change only. `beforeEvent` runs once the
   * flag is set and before the event (a vanished speaker reports its playback stopped first,
   * while listeners already see it unavailable).
   */
  protected setAvailable(available: boolean, beforeEvent?: () => void): void {
    if (available === this._available) return;
    this._available = available;
    beforeEvent?.();
    this.emit('availability', available);
  }

  /**
   * The play state the speaker is in now. A repeated 'playing' or 'paused' is not an event;
   * 'stopped' is emitted once, with why (ended, error, stopped).
   */
  protected setPlayState(state: SpeakerPlayState, reason?: StopReason, detail?: string): void {
    if (state === this._state) return;
    this._state = state;
    this.emit('state', state, reason, detail);
  }

  /** The volume the speaker reports (already on the hub's 0–50 scale). */
  protected setReportedVolume(volume: number): void {
    const v = clampVolume(volume);
    if (v === this._volume) return;
    this._volume = v;
    this.emit('volume', v);
  }

  /** Descriptive fields that changed (a rename in the speaker's own app); emits only what differs. */
  protected updateInfo(update: Partial<SpeakerInfo>): void {
    const changed: Partial<SpeakerInfo> = {};
    for (const key of Object.keys(update) as (keyof SpeakerInfo)[]) {
      if (update[key] !== undefined && update[key] !== this._info[key]) (changed as Record<string, unknown>)[key] = update[key];
    }
    if (!Object.keys(changed).length) return;
    this._info = { ...this._info, ...changed };
    this.emit('info', changed);
  }

  /** Throws the error every operation on an unreachable speaker gets. */
  protected assertAvailable(what = 'speaker is not reachable'): void {
    if (!this._available) throw new Error(what);
  }
}
