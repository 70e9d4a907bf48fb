import { EventEmitter } from 'node:events';
import {
  digitId,
  type MediaRequest,
  type Speaker,
  type SpeakerCapabilities,
  type SpeakerSnapshot,
  type SpeakerEvents,
  type SpeakerInfo,
  type SpeakerPlayState,
  type StopReason,
} from '../driver';
import type { StreamMember } from './hub-stream';
import type { GroupState, RawClient, RawVolume } from './model';

/**
 * Volume mapping. The hub speaks 0–50, snapcast a percent 0–100 plus a mute flag:
 * hub = muted ? 0 : round(percent / 2), so a muted client reads 0.
 * Setting 0 mutes and leaves the percent alone (unmuting in a snapcast app brings the old
 * level back); setting v > 0 unmutes with percent = 2v.
 */
export function hubVolume(v: RawVolume): number {
  if (v.muted) return 0;
  return Math.max(0, Math.min(50, Math.round(v.percent / 2)));
}

export function snapVolume(volume: number): Partial<RawVolume> {
  const v = Math.max(0, Math.min(50, Math.round(volume)));
  return v === 0 ? { muted: true } : { percent: v * 2, muted: false };
}

/** What a speaker asks of its server; the server routes playback to the hub stream. */
export interface SpeakerControl {
  play(s: SnapcastSpeaker, media: MediaRequest): Promise<void>;
  pause(s: SnapcastSpeaker): Promise<void>;
  resume(s: SnapcastSpeaker): Promise<void>;
  stop(s: SnapcastSpeaker): Promise<void>;
  position(s: SnapcastSpeaker): number | undefined;
  setVolume(s: SnapcastSpeaker, volume: number): Promise<void>;
  snapshot(s: SnapcastSpeaker): SpeakerSnapshot;
  isMuted(s: SnapcastSpeaker): boolean;
  setMute(s: SnapcastSpeaker, muted: boolean): Promise<void>;
  restore(s: SnapcastSpeaker, snap: SpeakerSnapshot, volumeOnly: boolean): Promise<void>;
}

/** Stable across restarts: derived from the server address and snapserver's client id. */
export function snapcastDeviceId(serverAddress: string, clientId: string): string {
  return digitId(`snapcast:${serverAddress}/${clientId}`);
}

export function describeClient(serverAddress: string, c: RawClient, g: GroupState | undefined, serverVersion: string): SpeakerInfo {
  return {
    name: c.config.name || c.host.name || c.id,
    groupName: g?.name || 'Snapcast',
    groupId: g ? digitId(`snapcast-group:${serverAddress}/${g.id}`, 10) : '0',
    modelName: `Snapcast ${c.snapclient?.name || 'client'}`,
    version: c.snapclient?.version || serverVersion,
    role: 21,
    macAddress: (c.host.mac ?? '').toUpperCase(),
    ipAddress: (c.host.ip ?? '').replace(/^::ffff:/, ''),
    // A snapclient listens on no port of its own: it connects out to the server.
    port: 0,
    wifiSignalStrength: 0,
  };
}

/** One snapclient as a hub speaker. */
export class SnapcastSpeaker extends EventEmitter<SpeakerEvents> implements Speaker, StreamMember {
  readonly driver = 'snapcast';
  /** Plays of several clients start sample-synchronously; snapshot = group, stream and volume; the client's own mute. */
  readonly capabilities: SpeakerCapabilities = { mute: true, snapshot: true, seek: true, syncGroup: true };
  private _available: boolean;
  private _state: SpeakerPlayState = 'stopped';
  private _volume: number;
  private _info: SpeakerInfo;

  constructor(
    readonly id: string,
    readonly clientId: string,
    private readonly control: SpeakerControl,
    info: SpeakerInfo,
    volume: number,
    available: boolean,
  ) {
    super();
    this._info = info;
    this._volume = volume;
    this._available = available;
  }

  get available(): boolean {
    return this._available;
  }
  get state(): SpeakerPlayState {
    return this._state;
  }
  get volume(): number {
    return this._volume;
  }
  info(): SpeakerInfo {
    return { ...this._info };
  }

  async play(media: MediaRequest): Promise<void> {
    this.assertAvailable();
    await this.control.play(this, media);
  }

  async pause(): Promise<void> {
    this.assertAvailable();
    await this.control.pause(this);
  }

  async resume(): Promise<void> {
    this.assertAvailable();
    await this.control.resume(this);
  }

  async stop(): Promise<void> {
    await this.control.stop(this);
  }

  position(): number | undefined {
    return this.control.position(this);
  }

  async setVolume(volume: number): Promise<void> {
    this.assertAvailable();
    await this.control.setVolume(this, volume);
  }

  /** snapcast's client mute (a muted client reads volume 0 and keeps its percent). */
  isMuted(): boolean {
    return this.control.isMuted(this);
  }

  async setMute(muted: boolean): Promise<void> {
    this.assertAvailable();
    await this.control.setMute(this, muted);
  }

  /** Its group (with the other clients in it), the group's stream, and its volume and mute. */
  async snapshot(): Promise<SpeakerSnapshot> {
    this.assertAvailable();
    return this.control.snapshot(this);
  }

  /** Back into its group, on its stream, at its volume (percent and mute as they were). */
  async restore(snap: SpeakerSnapshot, options: { volumeOnly?: boolean } = {}): Promise<void> {
    this.assertAvailable();
    await this.control.restore(this, snap, !!options.volumeOnly);
  }

  // ---- driver side --------------------------------------------------------------------

  changeState(state: SpeakerPlayState, reason?: StopReason, detail?: string): void {
    if (state === this._state && state !== 'stopped') return;
    if (state === 'stopped' && this._state === 'stopped') return;
    this._state = state;
    this.emit('state', state, reason, detail);
  }

  setAvailable(available: boolean): void {
    if (available === this._available) return;
    this._available = available;
    this.emit('availability', available);
  }

  update(info: SpeakerInfo, volume: number): void {
    const changed: Partial<SpeakerInfo> = {};
    for (const key of Object.keys(info) as (keyof SpeakerInfo)[]) {
      if (info[key] !== this._info[key]) (changed as Record<string, unknown>)[key] = info[key];
    }
    this._info = info;
    if (Object.keys(changed).length) this.emit('info', changed);
    if (volume !== this._volume) {
      this._volume = volume;
      this.emit('volume', volume);
    }
  }

  private assertAvailable(): void {
    if (!this._available) throw new Error('snapclient is not connected');
  }
}
