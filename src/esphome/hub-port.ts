import type { AnnouncementEvent, DeviceRecord, PlaybackSnapshot } from '../core/events';
import type { ExtensionContext } from '../extensions/extension';
import type { HubWireEvent } from '../hub-client/connection';
import { LocalConnection } from '../hub-client/local';
import type { Logger } from '../logger';

/**
 * Everything the ESPHome front end needs of the hub, in one adapter over the hub-client
 * layer (as the DLNA and MQTT front ends do): the speakers, each speaker's zone, volume, mute
 * and running announcements, kept from the bounded wire-event feed (re-read on overflow), and
 * the operations a media player command runs. Commands go through the operation table, so a
 * play from Home Assistant is seen by REST, MQTT and DLNA like any other, and their changes
 * come back here as events.
 */

export interface SpeakerView {
  id: string;
  name: string;
  active: boolean;
  /** 0–50. */
  volume: number;
}

/** What changed: a speaker's state ('speaker'), or the set of speakers itself. */
export type HubChange = { kind: 'speakers' } | { kind: 'speaker'; ids: string[] };

export class HubCommandError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const STOPPED: PlaybackSnapshot = { state: 'PlayerStateStopped', timeElapsed: -1, deviceIds: [] };

export class EsphomeHubPort {
  private readonly conn: LocalConnection;
  private unfollow?: () => void;
  private readonly byId = new Map<string, SpeakerView>();
  private readonly mutes = new Map<string, boolean>();
  private readonly zones = new Map<string, PlaybackSnapshot>();
  /** Announcements started and not yet over, by speaker. */
  private readonly announcing = new Map<string, Set<string>>();
  /** The last web URL each speaker played (PLAY after STOP plays it again). */
  private readonly lastUrl = new Map<string, string>();
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
      resync: () => {
        if (this.stopped) return;
        void this.load().catch((e: Error) => this.log.warn({ err: e.message }, 'ESPHome resync failed'));
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

  muted(id: string): boolean {
    return this.mutes.get(id) ?? false;
  }

  isAnnouncing(id: string): boolean {
    return (this.announcing.get(id)?.size ?? 0) > 0;
  }

  /** The zone a speaker plays in; without a speaker, the party (the zone holding every active speaker). */
  playback(deviceId?: string): PlaybackSnapshot {
    if (deviceId !== undefined) {
      for (const z of this.zones.values()) if (z.deviceIds.includes(deviceId)) return z;
      return STOPPED;
    }
    const active = this.speakers().filter((s) => s.active);
    for (const z of [...this.zones.values()].reverse()) if (active.length && active.every((s) => z.deviceIds.includes(s.id))) return z;
    return STOPPED;
  }

  lastUrlOf(id: string): string | undefined {
    return this.lastUrl.get(id);
  }

  async playOn(deviceIds: string[], url: string): Promise<void> {
    await this.run('play_web_media_selected_speakers', { MediaUrl: url, DeviceIDList: deviceIds.join(',') });
  }

  async playParty(url: string): Promise<void> {
    await this.run('play_web_media_party_mode', { MediaUrl: url });
  }

  async pause(zone: { deviceId: string } | { playbackId: string }): Promise<void> {
    await this.run('pause_play', 'deviceId' in zone ? { DeviceID: zone.deviceId } : { PlaybackID: zone.playbackId });
  }

  async resume(persistentId: string, deviceIds: string[] | 'party'): Promise<void> {
    if (deviceIds === 'party') await this.run('resume_hub_media_party_mode', { PersistentID: persistentId });
    else await this.run('resume_hub_media_selected_speakers', { PersistentID: persistentId, DeviceIDList: deviceIds.join(',') });
  }

  /** Stops a speaker's zone; a speaker sharing its zone leaves it (set_speaker_power off) so the others play on. */
  async stopSpeaker(id: string): Promise<void> {
    if (this.playback(id).deviceIds.length > 1) await this.run('set_speaker_power', { DeviceID: id, Power: 'off' });
    else await this.run('stop_play', { DeviceID: id });
  }

  async stopZone(playbackId: string): Promise<void> {
    await this.run('stop_play', { PlaybackID: playbackId });
  }

  async setVolume(id: string, volume: number): Promise<void> {
    await this.run('set_volume_device', { DeviceID: id, Volume: String(volume) });
  }

  async setVolumeAll(volume: number): Promise<void> {
    await this.run('set_volume', { Volume: String(volume) });
  }

  async setMute(id: string, mute: boolean): Promise<void> {
    await this.run('set_mute_device', { DeviceID: id, Mute: String(mute) });
  }

  /** The hub's announcement (with restore) of url on these speakers; its AnnouncementID. */
  async announce(ids: string[], url: string, mode: { mode: 'interrupt' | 'duck'; duckLevel?: number }): Promise<string> {
    const body = await this.run('announce', {
      MediaUrl: url,
      DeviceIDList: ids.join(','),
      Mode: mode.mode,
      ...(mode.duckLevel !== undefined ? { DuckLevel: String(mode.duckLevel) } : {}),
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
      this.announcing.delete(id);
      this.lastUrl.delete(id);
    }
    this.onChange({ kind: 'speakers' });
  }

  private event(e: HubWireEvent): void {
    switch (e.type) {
      case 'device': {
        const before = this.byId.get(e.data.device.DeviceID);
        const view = viewOf(e.data.device);
        this.byId.set(view.id, view);
        if (!before || before.name !== view.name) this.onChange({ kind: 'speakers' });
        else this.onChange({ kind: 'speaker', ids: [view.id] });
        return;
      }
      case 'volume': {
        const s = this.byId.get(e.data.deviceId);
        if (s) s.volume = e.data.volume;
        this.onChange({ kind: 'speaker', ids: [e.data.deviceId] });
        return;
      }
      case 'mute':
        this.mutes.set(e.data.deviceId, e.data.muted);
        this.onChange({ kind: 'speaker', ids: [e.data.deviceId] });
        return;
      case 'playbackState':
        this.playbackChanged(e.data);
        return;
      case 'announcement':
        this.announcementChanged(e.data);
        return;
      default:
        return;
    }
  }

  private playbackChanged(p: PlaybackSnapshot): void {
    const touched = new Set(p.deviceIds);
    const id = p.playbackId;
    if (id === undefined) {
      if (p.state === 'PlayerStateStopped') {
        for (const z of this.zones.values()) for (const d of z.deviceIds) touched.add(d);
        this.zones.clear();
      }
    } else {
      for (const d of this.zones.get(id)?.deviceIds ?? []) touched.add(d);
      if (p.state === 'PlayerStateStopped') this.zones.delete(id);
      else {
        // A speaker is in one zone at a time: a new zone takes it from the one it was in.
        for (const [zid, z] of this.zones) if (zid !== id && z.deviceIds.some((d) => p.deviceIds.includes(d))) this.zones.delete(zid);
        this.zones.set(id, p);
        if (p.kind === 'web' && p.url) for (const d of p.deviceIds) this.lastUrl.set(d, p.url);
      }
    }
    this.onChange({ kind: 'speaker', ids: [...touched] });
  }

  private announcementChanged(a: AnnouncementEvent): void {
    for (const d of a.deviceIds) {
      let set = this.announcing.get(d);
      if (a.phase === 'started') {
        if (!set) this.announcing.set(d, (set = new Set()));
        // Bounded by the hub's own announcement queue; a stale id is dropped on its end.
        if (set.size < 64) set.add(a.announcementId);
      } else {
        set?.delete(a.announcementId);
        if (set && set.size === 0) this.announcing.delete(d);
      }
    }
    this.onChange({ kind: 'speaker', ids: a.deviceIds });
  }
}

function viewOf(d: DeviceRecord): SpeakerView {
  return { id: d.DeviceID, name: d.DeviceName, active: d.Active, volume: d.Volume };
}
