import { EventEmitter } from 'node:events';
import type { DeviceRecord, PlaybackSnapshot, PlaybackState } from '../core/events';
import type { HubConnection, HubWireEvent } from './connection';

export interface ReadModelEvents {
  /** A speaker's record, mute or announcing state changed (or it appeared). */
  device: [DeviceRecord];
  /** The hub no longer lists this speaker. */
  missing: [string];
  playback: [PlaybackSnapshot];
  /** A full device list arrived (start, resync). */
  synced: [DeviceRecord[]];
}

const STOPPED: PlaybackSnapshot = { state: 'PlayerStateStopped', timeElapsed: -1, deviceIds: [] };

/**
 * The one read model of a hub that front ends show (HomeKit, MQTT, DLNA renderers): the last
 * known speaker records, playback, mute and who speaks an announcement, kept current from the
 * wire events and re-read in full after a (re)connect, so a read answers at once without asking
 * any speaker.
 */
export class HubReadModel extends EventEmitter<ReadModelEvents> {
  private readonly devices = new Map<string, DeviceRecord>();
  private readonly mutedIds = new Set<string>();
  /** Speakers speaking an announcement now (between its 'started' and 'ended'), with its id. */
  private readonly announcingIds = new Map<string, string>();
  private _playback: PlaybackSnapshot = STOPPED;
  private resyncing?: Promise<void>;

  get playback(): PlaybackSnapshot {
    return this._playback;
  }

  device(id: string): DeviceRecord | undefined {
    return this.devices.get(id);
  }

  all(): DeviceRecord[] {
    return [...this.devices.values()];
  }

  /** A speaker by DeviceID or (case-insensitive) DeviceName. */
  resolve(idOrName: string): DeviceRecord | undefined {
    const byId = this.devices.get(idOrName);
    if (byId) return byId;
    const lower = idOrName.toLowerCase();
    return this.all().find((d) => d.DeviceName.toLowerCase() === lower);
  }

  /** Whether this speaker plays now (the record's IsPlaying, kept in step with playback events). */
  isPlaying(id: string): boolean {
    return !!this.devices.get(id)?.IsPlaying;
  }

  muted(id: string): boolean {
    return this.mutedIds.has(id);
  }

  /** The announcement this speaker speaks now, if any. */
  announcing(id: string): string | undefined {
    return this.announcingIds.get(id);
  }

  /** Party mode: a playback plays on every available speaker. */
  partyOn(): boolean {
    const pb = this._playback;
    if (pb.state !== 'PlayerStatePlaying') return false;
    const available = this.all().filter((d) => d.Active);
    return available.length > 0 && available.every((d) => pb.deviceIds.includes(d.DeviceID));
  }

  /**
   * Follows a connection: every event applied, a full re-read on each resync (coalesced), and
   * every speaker unavailable while the hub is out of reach. Returns the unfollow function.
   */
  attach(hub: HubConnection, onError: (what: string, e: unknown) => void = () => undefined): () => void {
    return hub.follow({
      event: (e) => {
        try {
          this.apply(e);
        } catch (err) {
          onError(`handling a ${e.type} event`, err);
        }
      },
      resync: () => void this.resync(hub).catch((err) => onError("reading the hub's speakers", err)),
      lost: () => this.markUnreachable(),
    });
  }

  /** Re-reads the speaker list, their mute and the playback state (start, reconnect, overflow). */
  resync(hub: HubConnection): Promise<void> {
    this.resyncing ??= (async () => {
      const [list, status] = await Promise.all([hub.run('device_list'), hub.run('playback_status')]);
      const devices = list.DeviceList as DeviceRecord[];
      const mutes = await Promise.all(
        devices.map((d) =>
          d.Active
            ? hub.run('get_mute_device', { DeviceID: d.DeviceID }).then(
                (r) => r.Mute === 'true',
                () => false,
              )
            : false,
        ),
      );
      devices.forEach((d, i) => (mutes[i] ? this.mutedIds.add(d.DeviceID) : this.mutedIds.delete(d.DeviceID)));
      this.replaceDevices(devices);
      const state = String(status.PlaybackState) as PlaybackState;
      if (state !== this._playback.state) {
        this.setPlayback({ state, timeElapsed: Number(status.TimeElapsed), deviceIds: devices.filter((d) => d.IsPlaying).map((d) => d.DeviceID) });
      }
    })().finally(() => (this.resyncing = undefined));
    return this.resyncing;
  }

  replaceDevices(list: DeviceRecord[]): void {
    const seen = new Set<string>();
    for (const d of list) {
      seen.add(d.DeviceID);
      this.upsert(d);
    }
    for (const id of [...this.devices.keys()]) {
      if (!seen.has(id)) {
        this.devices.delete(id);
        this.mutedIds.delete(id);
        this.announcingIds.delete(id);
        this.emit('missing', id);
      }
    }
    this.emit('synced', list);
  }

  /** The hub is out of reach: every speaker reads as unavailable until the next full list. */
  markUnreachable(): void {
    for (const d of this.all()) if (d.Active) this.upsert({ ...d, Active: false, IsPlaying: false });
  }

  setPlayback(snapshot: PlaybackSnapshot): void {
    this._playback = snapshot;
    const playing = snapshot.state === 'PlayerStatePlaying' ? new Set(snapshot.deviceIds) : new Set<string>();
    for (const d of this.devices.values()) {
      const now = d.Active && playing.has(d.DeviceID);
      if (now !== d.IsPlaying) this.upsert({ ...d, IsPlaying: now });
    }
    this.emit('playback', snapshot);
  }

  apply(e: HubWireEvent): void {
    switch (e.type) {
      case 'device': {
        const d = e.data.device;
        // The record carries the speaker's own IsPlaying; the playback decides what front ends show.
        const inPlayback = this._playback.state === 'PlayerStatePlaying' && this._playback.deviceIds.includes(d.DeviceID);
        this.upsert({ ...d, IsPlaying: d.Active && (d.IsPlaying || inPlayback) });
        break;
      }
      case 'volume': {
        const d = this.devices.get(e.data.deviceId);
        if (d && d.Volume !== e.data.volume) this.upsert({ ...d, Volume: e.data.volume });
        break;
      }
      case 'mute': {
        const { deviceId, muted } = e.data;
        if (muted === this.mutedIds.has(deviceId)) break;
        if (muted) this.mutedIds.add(deviceId);
        else this.mutedIds.delete(deviceId);
        const d = this.devices.get(deviceId);
        if (d) this.emit('device', d);
        break;
      }
      case 'announcement': {
        const a = e.data;
        for (const id of a.deviceIds) {
          if (a.phase === 'started') this.announcingIds.set(id, a.announcementId);
          else if (this.announcingIds.get(id) === a.announcementId) this.announcingIds.delete(id);
          else continue;
          const d = this.devices.get(id);
          if (d) this.emit('device', d);
        }
        break;
      }
      case 'playbackState':
        this.setPlayback(e.data);
        break;
      case 'playbackTime':
        this._playback = { ...this._playback, timeElapsed: e.data.timeElapsed };
        break;
      default:
        break;
    }
  }

  private upsert(d: DeviceRecord): void {
    const old = this.devices.get(d.DeviceID);
    this.devices.set(d.DeviceID, d);
    if (!old || JSON.stringify(old) !== JSON.stringify(d)) this.emit('device', d);
  }
}
