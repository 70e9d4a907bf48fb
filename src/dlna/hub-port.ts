import type { AnnouncementEvent, DeviceRecord, PlaybackSnapshot } from '../core/events';
import type { ExtensionContext } from '../extensions/extension';
import type { HubWireEvent } from '../hub-client/connection';
import { LocalConnection } from '../hub-client/local';
import type { Logger } from '../logger';

/** The announce Mode the announcement renderers ask for (config dlna.announcementMode, duckLevel, fadeMs). */
export interface AnnounceMode {
  mode: 'interrupt' | 'duck';
  duckLevel?: number;
  fadeMs?: number;
}

/**
 * Everything the DLNA front end needs of the hub, in one small adapter: the speakers, the
 * playback, volumes and announcements (a read model fed by wire events, resynchronized when
 * the event queue overflows), and the operations a renderer runs. Every command goes through
 * the operation table, so REST, MQTT, HomeKit and the event stream see a DLNA play as any
 * other. The rest of src/dlna knows only this interface.
 */

export interface SpeakerView {
  id: string;
  name: string;
  modelName: string;
  active: boolean;
  /** 0–50. */
  volume: number;
}

export type HubChange =
  | { kind: 'speakers' }
  | { kind: 'volume'; id: string; volume: number }
  | { kind: 'mute'; id: string; muted: boolean }
  | { kind: 'playback'; snapshot: PlaybackSnapshot }
  | { kind: 'time'; timeElapsed: number; deviceIds: string[] }
  | { kind: 'announcement'; event: AnnouncementEvent };

/** A refused operation: the hub's error code and message (mapped onto UPnP errors by the caller). */
export class HubCommandError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** A zone, named by a speaker in it or by its PlaybackID. */
export type ZoneRef = { deviceId: string } | { playbackId: string };

export interface HubPort {
  start(onChange: (c: HubChange) => void): Promise<void>;
  stop(): Promise<void>;
  speakers(): SpeakerView[];
  speaker(id: string): SpeakerView | undefined;
  /**
   * The playback (zone) a speaker plays in; without one, the party: the zone that holds every
   * available speaker. Stopped when there is none.
   */
  playback(deviceId?: string): PlaybackSnapshot;
  /** Plays a web URL (startAt: whole seconds into it, a paused file resumed). */
  playOn(deviceIds: string[], url: string, startAt?: number): Promise<void>;
  playParty(url: string, startAt?: number): Promise<void>;
  /** Pauses one zone: a speaker's, or the one with that PlaybackID. */
  pause(zone: ZoneRef): Promise<void>;
  /** Resumes paused hub media on these speakers (party: every speaker). */
  resume(persistentId: string, target: { party: true } | { deviceIds: string[] }): Promise<void>;
  /** Stops one zone; a speaker that shares its zone with others leaves it alone (they play on). */
  stopPlay(zone: ZoneRef): Promise<void>;
  setVolume(id: string, volume: number): Promise<void>;
  setVolumeAll(volume: number): Promise<void>;
  /** Mute when the hub has it; undefined when it cannot tell. */
  muted(id: string): boolean | undefined;
  setMute(id: string, mute: boolean): Promise<void>;
  /** Starts an announcement of url on one speaker (volume 0–50 while it plays, and how it treats the music); its AnnouncementID. */
  announce(id: string, url: string, volume?: number, mode?: AnnounceMode): Promise<string>;
}

const STOPPED: PlaybackSnapshot = { state: 'PlayerStateStopped', timeElapsed: -1, deviceIds: [] };

/**
 * The adapter over the hub-client layer's connection to the hub this extension runs in
 * (operations in its trusted session, the bounded wire-event feed with resync).
 */
export class ClientHubPort implements HubPort {
  private readonly conn: LocalConnection;
  private unfollow?: () => void;
  private readonly byId = new Map<string, SpeakerView>();
  private readonly mutes = new Map<string, boolean>();
  /** The live playbacks (zones) by PlaybackID, from the wire events. */
  private readonly zones = new Map<string, PlaybackSnapshot>();
  private onChange: (c: HubChange) => void = () => undefined;
  private stopped = false;

  constructor(
    ctx: ExtensionContext,
    private readonly log: Logger,
  ) {
    this.conn = new LocalConnection(ctx, { logger: log, maxQueued: 2000 });
  }

  async start(onChange: (c: HubChange) => void): Promise<void> {
    this.onChange = onChange;
    await this.load();
    this.unfollow = this.conn.follow({
      event: (e) => this.event(e),
      // Events may have been missed: read the speakers again (the playback comes with the next event).
      resync: () => {
        if (this.stopped) return;
        void this.load().catch((e: Error) => this.log.warn({ err: e.message }, 'DLNA resync failed'));
      },
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unfollow?.();
    await this.conn.close();
  }

  speakers(): SpeakerView[] {
    return [...this.byId.values()];
  }

  speaker(id: string): SpeakerView | undefined {
    return this.byId.get(id);
  }

  playback(deviceId?: string): PlaybackSnapshot {
    if (deviceId !== undefined) {
      for (const z of this.zones.values()) if (z.deviceIds.includes(deviceId)) return z;
      return STOPPED;
    }
    const active = this.speakers().filter((s) => s.active);
    for (const z of [...this.zones.values()].reverse()) if (active.length && active.every((s) => z.deviceIds.includes(s.id))) return z;
    return STOPPED;
  }

  async playOn(deviceIds: string[], url: string, startAt?: number): Promise<void> {
    await this.run('play_web_media_selected_speakers', { MediaUrl: url, DeviceIDList: deviceIds.join(','), ...startAtParam(startAt) });
  }

  async playParty(url: string, startAt?: number): Promise<void> {
    await this.run('play_web_media_party_mode', { MediaUrl: url, ...startAtParam(startAt) });
  }

  async pause(zone: ZoneRef): Promise<void> {
    await this.run('pause_play', 'deviceId' in zone ? { DeviceID: zone.deviceId } : { PlaybackID: zone.playbackId });
  }

  async resume(persistentId: string, target: { party: true } | { deviceIds: string[] }): Promise<void> {
    if ('party' in target) await this.run('resume_hub_media_party_mode', { PersistentID: persistentId });
    else await this.run('resume_hub_media_selected_speakers', { PersistentID: persistentId, DeviceIDList: target.deviceIds.join(',') });
  }

  async stopPlay(zone: ZoneRef): Promise<void> {
    if ('playbackId' in zone) {
      await this.run('stop_play', { PlaybackID: zone.playbackId });
      return;
    }
    const shared = this.playback(zone.deviceId).deviceIds.length > 1;
    // A speaker's Stop touches that speaker only: in a shared zone it leaves, the others play on.
    if (shared) await this.run('set_speaker_power', { DeviceID: zone.deviceId, Power: 'off' });
    else await this.run('stop_play', { DeviceID: zone.deviceId });
  }

  async setVolume(id: string, volume: number): Promise<void> {
    await this.run('set_volume_device', { DeviceID: id, Volume: String(volume) });
  }

  async setVolumeAll(volume: number): Promise<void> {
    await this.run('set_volume', { Volume: String(volume) });
  }

  muted(id: string): boolean | undefined {
    return this.mutes.get(id);
  }

  async setMute(id: string, mute: boolean): Promise<void> {
    await this.run('set_mute_device', { DeviceID: id, Mute: String(mute) });
  }

  async announce(id: string, url: string, volume?: number, mode?: AnnounceMode): Promise<string> {
    const body = await this.run('announce', {
      MediaUrl: url,
      DeviceIDList: id,
      ...(volume !== undefined ? { Volume: String(volume) } : {}),
      ...(mode ? { Mode: mode.mode } : {}),
      ...(mode?.duckLevel !== undefined ? { DuckLevel: String(mode.duckLevel) } : {}),
      ...(mode?.fadeMs !== undefined ? { FadeMs: String(mode.fadeMs) } : {}),
    });
    return String(body.AnnouncementID);
  }

  private async run(operation: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    try {
      return await this.conn.run(operation, params);
    } catch (e) {
      const err = e as { code?: string; message?: string };
      throw new HubCommandError(err.code ?? 'InternalError', err.message ?? String(e));
    }
  }

  private async load(): Promise<void> {
    const body = await this.run('device_list', {});
    const list = (body.DeviceList ?? []) as DeviceRecord[];
    const seen = new Set<string>();
    for (const d of list) {
      seen.add(d.DeviceID);
      this.byId.set(d.DeviceID, viewOf(d));
      const m = await this.run('get_mute_device', { DeviceID: d.DeviceID }).catch(() => undefined);
      if (m) this.mutes.set(d.DeviceID, m.Mute === 'true' || m.Mute === true);
    }
    for (const id of [...this.byId.keys()]) {
      if (seen.has(id)) continue;
      this.byId.delete(id);
      this.mutes.delete(id);
    }
    this.onChange({ kind: 'speakers' });
  }

  private event(e: HubWireEvent): void {
    switch (e.type) {
      case 'device': {
        const before = this.byId.get(e.data.device.DeviceID);
        const view = viewOf(e.data.device);
        this.byId.set(view.id, view);
        if (!before || before.active !== view.active || before.name !== view.name) this.onChange({ kind: 'speakers' });
        if (before && before.volume !== view.volume) this.onChange({ kind: 'volume', id: view.id, volume: view.volume });
        return;
      }
      case 'volume': {
        const s = this.byId.get(e.data.deviceId);
        if (s) s.volume = e.data.volume;
        this.onChange({ kind: 'volume', id: e.data.deviceId, volume: e.data.volume });
        return;
      }
      case 'mute':
        this.mutes.set(e.data.deviceId, e.data.muted);
        this.onChange({ kind: 'mute', id: e.data.deviceId, muted: e.data.muted });
        return;
      case 'playbackState': {
        const id = e.data.playbackId;
        if (id === undefined) {
          if (e.data.state === 'PlayerStateStopped') this.zones.clear();
        } else if (e.data.state === 'PlayerStateStopped') this.zones.delete(id);
        else this.zones.set(id, e.data);
        this.onChange({ kind: 'playback', snapshot: e.data });
        return;
      }
      case 'playbackTime': {
        const z = e.data.playbackId !== undefined ? this.zones.get(e.data.playbackId) : undefined;
        if (z) this.zones.set(z.playbackId!, { ...z, timeElapsed: e.data.timeElapsed });
        this.onChange({ kind: 'time', timeElapsed: e.data.timeElapsed, deviceIds: e.data.deviceIds });
        return;
      }
      case 'announcement':
        this.onChange({ kind: 'announcement', event: e.data });
        return;
      default:
        return;
    }
  }
}

function startAtParam(startAt?: number): { StartAt?: string } {
  return startAt ? { StartAt: String(Math.floor(startAt)) } : {};
}

function viewOf(d: DeviceRecord): SpeakerView {
  return { id: d.DeviceID, name: d.DeviceName, modelName: d.ModelName, active: d.Active, volume: d.Volume };
}
