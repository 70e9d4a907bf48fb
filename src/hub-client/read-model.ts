import { EventEmitter } from 'node:events';
import type { DeviceRecord, PlaybackSnapshot, PlaybackState } from '../core/events';
import type { HubConnection, HubWireEvent } from './connection';
import { ReadModelState, type ReadModelChange } from './read-model-state';

export { ReadModelState, type ReadModelChange } from './read-model-state';

export interface ReadModelEvents {
  /** A speaker's record, mute or announcing state changed (or it appeared). */
  device: [DeviceRecord];
  /** The hub no longer lists this speaker. */
  missing: [string];
  playback: [PlaybackSnapshot];
  /** A full device list arrived (start, resync). */
  synced: [DeviceRecord[]];
}

/**
 * The one read model of a hub that front ends show (HomeKit, MQTT, DLNA renderers, the browser
 * page): the last known speaker records, playback, mute and who speaks an announcement, kept
 * current from the wire events and re-read in full after a (re)connect, so a read answers at
 * once without asking any speaker. The state and its rules are ReadModelState
 * (read-model-state.ts, which the browser page loads as it is); this class adds what needs
 * Node: events for the front ends and following a HubConnection.
 */
export class HubReadModel extends EventEmitter<ReadModelEvents> {
  private readonly state = new ReadModelState((c) => this.report(c));
  private resyncing?: Promise<void>;

  get playback(): PlaybackSnapshot {
    return this.state.playback;
  }

  /** The playback (zone) a speaker plays in; Stopped when none. */
  playbackOf(deviceId: string): PlaybackSnapshot {
    return this.state.playbackOf(deviceId);
  }

  /** Every live playback (zone), oldest first. */
  playbacks(): PlaybackSnapshot[] {
    return this.state.playbacks();
  }

  device(id: string): DeviceRecord | undefined {
    return this.state.device(id);
  }

  all(): DeviceRecord[] {
    return this.state.all();
  }

  /** A speaker by DeviceID or (case-insensitive) DeviceName. */
  resolve(idOrName: string): DeviceRecord | undefined {
    return this.state.resolve(idOrName);
  }

  /** Whether this speaker plays now (the record's IsPlaying, kept in step with playback events). */
  isPlaying(id: string): boolean {
    return this.state.isPlaying(id);
  }

  muted(id: string): boolean {
    return this.state.muted(id);
  }

  /** The announcement this speaker speaks now, if any. */
  announcing(id: string): string | undefined {
    return this.state.announcing(id);
  }

  /** Party mode: a playback plays on every available speaker. */
  partyOn(): boolean {
    return this.state.partyOn();
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
      devices.forEach((d, i) => this.state.setMuted(d.DeviceID, mutes[i]));
      this.replaceDevices(devices);
      // Every zone, where the hub lists them (playback_list); a hub without it has one playback.
      const zones = await hub.run('playback_list').then(
        (r) => r.PlaybackList as Record<string, unknown>[],
        () => undefined,
      );
      if (zones) {
        this.state.setPlaybacks(zones.map(fromListEntry));
        return;
      }
      const state = String(status.PlaybackState) as PlaybackState;
      if (state !== this.playback.state) {
        this.setPlayback({ state, timeElapsed: Number(status.TimeElapsed), deviceIds: devices.filter((d) => d.IsPlaying).map((d) => d.DeviceID) });
      }
    })().finally(() => (this.resyncing = undefined));
    return this.resyncing;
  }

  replaceDevices(list: DeviceRecord[]): void {
    this.state.replaceDevices(list);
  }

  /** The hub is out of reach: every speaker reads as unavailable until the next full list. */
  markUnreachable(): void {
    this.state.markUnreachable();
  }

  setPlayback(snapshot: PlaybackSnapshot): void {
    this.state.setPlayback(snapshot);
  }

  apply(e: HubWireEvent): void {
    this.state.apply(e);
  }

  private report(c: ReadModelChange): void {
    switch (c.kind) {
      case 'device':
        this.emit('device', c.device);
        break;
      case 'missing':
        this.emit('missing', c.deviceId);
        break;
      case 'playback':
        this.emit('playback', c.playback);
        break;
      case 'synced':
        this.emit('synced', c.devices);
        break;
      default:
        break; // time ticks: the front ends read playback.timeElapsed when they need it
    }
  }
}

/** A playback_list entry as the snapshot the wire events carry. */
function fromListEntry(e: Record<string, unknown>): PlaybackSnapshot {
  return {
    playbackId: String(e.PlaybackID),
    state: e.PlaybackState as PlaybackState,
    timeElapsed: Number(e.TimeElapsed),
    kind: e.MediaKind as PlaybackSnapshot['kind'],
    ...(e.Title !== undefined ? { title: String(e.Title) } : {}),
    ...(e.MediaUrl !== undefined ? { url: String(e.MediaUrl) } : {}),
    ...(e.PersistentID !== undefined ? { persistentId: String(e.PersistentID) } : {}),
    priority: Number(e.Priority),
    deviceIds: (e.DeviceIDList as string[]) ?? [],
  };
}
