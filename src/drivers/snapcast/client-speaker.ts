import { BaseSpeaker } from '../base-speaker';
import {
  digitId,
  type MediaRequest,
  type SpeakerCapabilities,
  type SpeakerSnapshot,
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

/** What a client speaker asks of its snapserver connection, which routes playback to the hub stream (the Homebridge plugin's SpeakerControl is another thing). */
export interface ClientRouting {
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
  /** What an announcement on this server cannot keep as it was (announcement_status RestoreLimits), if anything. */
  restoreLimit(): string | undefined;
  /** Why a ducked announcement to `targets` (DeviceIDs) cannot be mixed into what the client plays now. */
  duckUnavailable(s: SnapcastSpeaker, targets: readonly string[]): string | undefined;
}

/** Stable across restarts: derived from the server address and snapserver's client id. */
export function snapcastDeviceId(serverAddress: string, clientId: string): string {
  return digitId(`snapcast:${serverAddress}/${clientId}`);
}

export function describeClient(serverAddress: string, c: RawClient, g: GroupState | undefined, serverVersion: string): SpeakerInfo {
  return {
    // Not the host's name: snapclients on one host (several instances, --hostID) share it.
    name: c.config.name || c.id,
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

/** One snapclient as a hub speaker: BaseSpeaker keeps its state; the server routes its commands. */
export class SnapcastSpeaker extends BaseSpeaker implements StreamMember {
  constructor(
    id: string,
    readonly clientId: string,
    private readonly control: ClientRouting,
    info: SpeakerInfo,
    volume: number,
    available: boolean,
  ) {
    super(id, 'snapcast', info, { volume, available });
  }

  /**
   * Plays of several clients start sample-synchronously; snapshot = group, stream and volume;
   * the client's own mute; ducked announcements mixed into the hub's own music (duckUnavailable
   * says when not). restoreLimit while its server has no announcement stream (the
   * music of the server's other clients is held while an announcement plays).
   */
  get capabilities(): SpeakerCapabilities {
    const limit = this.control.restoreLimit();
    return { mute: true, snapshot: true, seek: true, syncGroup: true, duck: true, ...(limit ? { restoreLimit: limit } : {}) };
  }

  /** The hub feeds the music it mixes into: another source's stream, or music shared with clients not announced, cannot be ducked. */
  duckUnavailable(targets: readonly string[]): string | undefined {
    return this.control.duckUnavailable(this, targets);
  }

  async play(media: MediaRequest): Promise<void> {
    this.assertConnected();
    await this.control.play(this, media);
  }

  async pause(): Promise<void> {
    this.assertConnected();
    await this.control.pause(this);
  }

  async resume(): Promise<void> {
    this.assertConnected();
    await this.control.resume(this);
  }

  async stop(): Promise<void> {
    await this.control.stop(this);
  }

  position(): number | undefined {
    return this.control.position(this);
  }

  async setVolume(volume: number): Promise<void> {
    this.assertConnected();
    await this.control.setVolume(this, volume);
  }

  /** snapcast's client mute (a muted client reads volume 0 and keeps its percent). */
  isMuted(): boolean {
    return this.control.isMuted(this);
  }

  async setMute(muted: boolean): Promise<void> {
    this.assertConnected();
    await this.control.setMute(this, muted);
  }

  /** Its group (with the other clients in it), the group's stream, and its volume and mute. */
  async snapshot(): Promise<SpeakerSnapshot> {
    this.assertConnected();
    return this.control.snapshot(this);
  }

  /** Back into its group, on its stream, at its volume (percent and mute as they were). */
  async restore(snap: SpeakerSnapshot, options: { volumeOnly?: boolean } = {}): Promise<void> {
    this.assertConnected();
    await this.control.restore(this, snap, !!options.volumeOnly);
  }

  // ---- driver side (the server and the hub stream report what snapserver says) ----------

  changeState(state: SpeakerPlayState, reason?: StopReason, detail?: string): void {
    this.setPlayState(state, reason, detail);
  }

  /** Connected to snapserver (and the hub to snapserver), or not. */
  setConnected(connected: boolean): void {
    this.setAvailable(connected);
  }

  /** What snapserver now says about the client: its descriptive fields and volume. */
  update(info: SpeakerInfo, volume: number): void {
    this.updateInfo(info);
    this.setReportedVolume(volume);
  }

  private assertConnected(): void {
    this.assertAvailable('snapclient is not connected');
  }
}
