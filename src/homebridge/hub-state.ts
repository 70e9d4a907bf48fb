import { EventEmitter } from 'node:events';
import type { DeviceRecord, PlaybackSnapshot } from '../core/events';
import type { HubWireEvent } from './hub-connection';

export interface HubStateEvents {
  /** A speaker's record changed (or appeared). */
  device: [DeviceRecord];
  /** The hub no longer lists this speaker. */
  missing: [string];
  playback: [PlaybackSnapshot];
  /** A full device list arrived (start, resync). */
  synced: [DeviceRecord[]];
}

const STOPPED: PlaybackSnapshot = { state: 'PlayerStateStopped', timeElapsed: -1, deviceIds: [] };

/**
 * What HomeKit reads: the last known speaker records and playback, kept current from the
 * hub's events, so a characteristic read answers at once without asking any speaker.
 */
export class HubState extends EventEmitter<HubStateEvents> {
  private readonly devices = new Map<string, DeviceRecord>();
  private _playback: PlaybackSnapshot = STOPPED;

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

  replaceDevices(list: DeviceRecord[]): void {
    const seen = new Set<string>();
    for (const d of list) {
      seen.add(d.DeviceID);
      this.upsert(d);
    }
    for (const id of [...this.devices.keys()]) {
      if (!seen.has(id)) {
        this.devices.delete(id);
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
        // The record carries the speaker's own IsPlaying; the playback decides what HomeKit shows.
        const inPlayback = this._playback.state === 'PlayerStatePlaying' && this._playback.deviceIds.includes(d.DeviceID);
        this.upsert({ ...d, IsPlaying: d.Active && (d.IsPlaying || inPlayback) });
        break;
      }
      case 'volume': {
        const d = this.devices.get(e.data.deviceId);
        if (d && d.Volume !== e.data.volume) this.upsert({ ...d, Volume: e.data.volume });
        break;
      }
      case 'playbackState':
        this.setPlayback(e.data);
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
