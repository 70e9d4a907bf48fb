import type { DeviceRecord, PlaybackSnapshot } from '../core/events';
import type { ExtensionContext } from '../extensions/extension';
import type { Logger } from '../logger';
import type { HubWireEvent } from './connection';
import { LocalConnection } from './local';

/**
 * What a protocol front end (DLNA renderers, ESPHome media players) needs of the hub it runs
 * in, shared: a read model of the speakers, their mutes and the zones, kept from the bounded
 * wire-event feed (read again when it overflows), and the operations a room's controls run.
 * Every command goes through the operation table, so REST, MQTT and the other front ends see
 * it as any other, and its changes come back as events. Each front end adds its own view of a
 * speaker and what it tells its protocol when something changed.
 */

/** A refused operation: the hub's error code and message (each front end maps it onto its protocol's errors). */
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

/** What every front end's speaker view holds. */
export interface SpeakerViewBase {
  id: string;
  name: string;
  active: boolean;
  /** 0–50. */
  volume: number;
}

const STOPPED: PlaybackSnapshot = { state: 'PlayerStateStopped', timeElapsed: -1, deviceIds: [] };

export abstract class FrontEndHubPort<V extends SpeakerViewBase, C> {
  private readonly conn: LocalConnection;
  private unfollow?: () => void;
  protected readonly byId = new Map<string, V>();
  protected readonly mutes = new Map<string, boolean>();
  /** The live playbacks (zones) by PlaybackID, from the wire events (see zoneChanged: a speaker is in one at most). */
  protected readonly zones = new Map<string, PlaybackSnapshot>();
  protected onChange: (c: C) => void = () => undefined;
  private stopped = false;

  constructor(
    ctx: ExtensionContext,
    protected readonly log: Logger,
    /** The front end's name in log lines ("DLNA", "ESPHome"). */
    private readonly what: string,
  ) {
    this.conn = new LocalConnection(ctx, { logger: log, maxQueued: 2000 });
  }

  /** The front end's view of one speaker. */
  protected abstract viewOf(d: DeviceRecord): V;
  /** One wire event, into the read model and the front end's change. */
  protected abstract event(e: HubWireEvent): void;
  /** The speakers were read (again). */
  protected abstract speakersLoaded(): void;
  /** A speaker is gone: whatever the front end keeps of it goes too. */
  protected forgetSpeaker(_id: string): void {}

  async start(onChange: (c: C) => void): Promise<void> {
    this.onChange = onChange;
    await this.load();
    this.unfollow = this.conn.follow({
      event: (e) => this.event(e),
      // Events may have been missed: read the speakers again (the playback comes with the next event).
      resync: () => {
        if (this.stopped) return;
        void this.load().catch((e: Error) => this.log.warn({ err: e.message }, `${this.what} resync failed`));
      },
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unfollow?.();
    await this.conn.close();
  }

  speakers(): V[] {
    return [...this.byId.values()];
  }

  speaker(id: string): V | undefined {
    return this.byId.get(id);
  }

  /**
   * The playback (zone) a speaker plays in; without one, the party: the zone that holds every
   * active speaker. Stopped when there is none.
   */
  playback(deviceId?: string): PlaybackSnapshot {
    if (deviceId !== undefined) {
      for (const z of this.zones.values()) if (z.deviceIds.includes(deviceId)) return z;
      return STOPPED;
    }
    const active = this.speakers().filter((s) => s.active);
    for (const z of [...this.zones.values()].reverse()) if (active.length && active.every((s) => z.deviceIds.includes(s.id))) return z;
    return STOPPED;
  }

  /**
   * One playbackState event into the zone map, by the one rule a user expects of every front
   * end: a speaker belongs to the zone that started on it last, at once. A zone's event that
   * names a speaker takes it out of any other zone here (a zone left with none is gone),
   * without waiting for that zone's own event — it comes first from the hub, but a front end
   * that fell behind the feed lost it (it resyncs the speakers, not the zones that ended).
   * Answers the speakers whose zone changed: the event's, and the zone's members before it.
   */
  protected zoneChanged(p: PlaybackSnapshot): string[] {
    const touched = new Set(p.deviceIds);
    const id = p.playbackId;
    if (id === undefined) {
      // No playback id: the hub has no zone at all (a subscription's first event when none plays).
      if (p.state === 'PlayerStateStopped') {
        for (const z of this.zones.values()) for (const d of z.deviceIds) touched.add(d);
        this.zones.clear();
      }
      return [...touched];
    }
    for (const d of this.zones.get(id)?.deviceIds ?? []) touched.add(d);
    if (p.state === 'PlayerStateStopped') {
      this.zones.delete(id);
      return [...touched];
    }
    for (const [zid, z] of this.zones) {
      if (zid === id || !z.deviceIds.some((d) => p.deviceIds.includes(d))) continue;
      const rest = z.deviceIds.filter((d) => !p.deviceIds.includes(d));
      if (rest.length) this.zones.set(zid, { ...z, deviceIds: rest });
      else this.zones.delete(zid);
    }
    this.zones.set(id, p);
    return [...touched];
  }

  /** A playbackTime event: the zone's position (its members do not change). */
  protected zoneTime(playbackId: string | undefined, timeElapsed: number): void {
    const z = playbackId !== undefined ? this.zones.get(playbackId) : undefined;
    if (z) this.zones.set(playbackId!, { ...z, timeElapsed });
  }

  /** Web media on these speakers, from `startAt` seconds when given. */
  async playOn(deviceIds: string[], url: string, startAt?: number): Promise<void> {
    await this.run('play_web_media_selected_speakers', { MediaUrl: url, DeviceIDList: deviceIds.join(','), ...startAtParam(startAt) });
  }

  async playParty(url: string, startAt?: number): Promise<void> {
    await this.run('play_web_media_party_mode', { MediaUrl: url, ...startAtParam(startAt) });
  }

  /** Pauses one zone: a speaker's, or the one with that PlaybackID. */
  async pause(zone: ZoneRef): Promise<void> {
    await this.run('pause_play', 'deviceId' in zone ? { DeviceID: zone.deviceId } : { PlaybackID: zone.playbackId });
  }

  /** Resumes paused hub media on these speakers (party: every speaker). */
  async resume(persistentId: string, target: { party: true } | { deviceIds: string[] }): Promise<void> {
    if ('party' in target) await this.run('resume_hub_media_party_mode', { PersistentID: persistentId });
    else await this.run('resume_hub_media_selected_speakers', { PersistentID: persistentId, DeviceIDList: target.deviceIds.join(',') });
  }

  /** Stops one zone; a speaker that shares its zone with others leaves it alone (set_speaker_power off: they play on). */
  async stopPlay(zone: ZoneRef): Promise<void> {
    if ('playbackId' in zone) {
      await this.run('stop_play', { PlaybackID: zone.playbackId });
      return;
    }
    if (this.playback(zone.deviceId).deviceIds.length > 1) await this.run('set_speaker_power', { DeviceID: zone.deviceId, Power: 'off' });
    else await this.run('stop_play', { DeviceID: zone.deviceId });
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

  protected async run(operation: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
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
      this.byId.set(d.DeviceID, this.viewOf(d));
      const m = await this.run('get_mute_device', { DeviceID: d.DeviceID }).catch(() => undefined);
      if (m) this.mutes.set(d.DeviceID, m.Mute === 'true' || m.Mute === true);
    }
    for (const id of [...this.byId.keys()]) {
      if (seen.has(id)) continue;
      this.byId.delete(id);
      this.mutes.delete(id);
      this.forgetSpeaker(id);
    }
    this.speakersLoaded();
  }
}

function startAtParam(startAt: number | undefined): Record<string, string> {
  return startAt !== undefined && startAt > 0 ? { StartAt: String(Math.floor(startAt)) } : {};
}
