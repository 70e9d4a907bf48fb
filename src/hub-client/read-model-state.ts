import type { DeviceRecord, PlaybackSnapshot } from '../core/events';
import type { WireEvent, WireEventType } from '../extensions/wire-events';

/*
 * The read model's state and the rules that change it, with nothing of Node in it: only type
 * imports (erased when compiled), no node: modules, no EventEmitter. The hub's front ends use it
 * through HubReadModel (read-model.ts); the browser page loads the compiled module as it is
 * (served at /client/read-model.js, see src/web-client/routes.ts) and feeds it the same wire
 * events, so both show a hub by the same rules. test/web-client.test.ts checks the served
 * copy runs with nothing but a `window`.
 */

/** What changed, in the order it changed. */
export type ReadModelChange =
  /** A speaker's record, mute or announcing state changed (or it appeared). */
  | { kind: 'device'; device: DeviceRecord }
  /** The hub no longer lists this speaker. */
  | { kind: 'missing'; deviceId: string }
  | { kind: 'playback'; playback: PlaybackSnapshot }
  /** The playback's time ticked (each second while playing). */
  | { kind: 'time'; timeElapsed: number; playbackId?: string }
  /** A full device list arrived (start, resync). */
  | { kind: 'synced'; devices: DeviceRecord[] };

/** The wire events apply() uses (a client that chooses what to receive, e.g. the page's event stream, asks for these). */
export const APPLIED_EVENT_TYPES = [
  'device',
  'volume',
  'mute',
  'announcement',
  'playbackState',
  'playbackTime',
] as const satisfies readonly WireEventType[];

export const STOPPED: PlaybackSnapshot = { state: 'PlayerStateStopped', timeElapsed: -1, deviceIds: [] };

/**
 * The last known speaker records, playback, mute and who speaks an announcement: kept current
 * by apply() (the wire events), replaceDevices() and setPlayback() (full reads), so a read
 * answers at once without asking any speaker. Every change is reported to `onChange`.
 */
export class ReadModelState {
  private readonly devices = new Map<string, DeviceRecord>();
  private readonly mutedIds = new Set<string>();
  /** Speakers speaking an announcement now (between its 'started' and 'ended'), with its id. */
  private readonly announcingIds = new Map<string, string>();
  /** Speakers whose own record says they play (IsPlaying from the hub), zone or not: an MPD playing its own queue is one. */
  private readonly ownPlaying = new Set<string>();
  /** The live playbacks (zones) by PlaybackID ('' for one read in full, which has none), oldest first. */
  private readonly zones = new Map<string, PlaybackSnapshot>();

  constructor(private readonly onChange: (change: ReadModelChange) => void = () => undefined) {}

  /** The most recently started playback (the hub's playback to a front end that names no speaker). */
  get playback(): PlaybackSnapshot {
    let last: PlaybackSnapshot = STOPPED;
    for (const z of this.zones.values()) last = z;
    return last;
  }

  /** The playback (zone) a speaker plays in; Stopped when none. */
  playbackOf(deviceId: string): PlaybackSnapshot {
    for (const z of this.zones.values()) if (z.deviceIds.includes(deviceId)) return z;
    return STOPPED;
  }

  /** Every live playback, oldest first. */
  playbacks(): PlaybackSnapshot[] {
    return [...this.zones.values()];
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

  /**
   * Busy: the speaker plays media the hub did not start (an MPD's own queue, another app's
   * stream): its record says it plays, and no playing zone holds it. Front ends show it as busy,
   * not as ready (nothing plays) nor as the hub's playing.
   */
  busy(id: string): boolean {
    return !!this.devices.get(id)?.Active && this.ownPlaying.has(id) && !this.inPlayingZone(id);
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
    const available = this.all().filter((d) => d.Active);
    if (!available.length) return false;
    return this.playbacks().some((pb) => pb.state === 'PlayerStatePlaying' && available.every((d) => pb.deviceIds.includes(d.DeviceID)));
  }

  /** Whether a speaker is in a playing zone. */
  private inPlayingZone(id: string): boolean {
    return this.playbackOf(id).state === 'PlayerStatePlaying';
  }

  /** Mute as read in full (get_mute_device at a resync): changes no record, so reports nothing. */
  setMuted(id: string, muted: boolean): void {
    if (muted) this.mutedIds.add(id);
    else this.mutedIds.delete(id);
  }

  /** A full speaker list: records upserted, speakers no longer listed forgotten. */
  replaceDevices(list: DeviceRecord[]): void {
    const seen = new Set<string>();
    for (const d of list) {
      seen.add(d.DeviceID);
      this.noteOwn(d);
      this.upsert(d);
    }
    for (const id of [...this.devices.keys()]) {
      if (!seen.has(id)) {
        this.devices.delete(id);
        this.ownPlaying.delete(id);
        this.mutedIds.delete(id);
        this.announcingIds.delete(id);
        this.onChange({ kind: 'missing', deviceId: id });
      }
    }
    this.onChange({ kind: 'synced', devices: list });
  }

  /** The hub is out of reach: every speaker reads as unavailable until the next full list. */
  markUnreachable(): void {
    this.ownPlaying.clear();
    for (const d of this.all()) if (d.Active) this.upsert({ ...d, Active: false, IsPlaying: false });
  }

  /** Every live playback, read in full (playback_list): replaces what the events built. */
  setPlaybacks(list: PlaybackSnapshot[]): void {
    this.zones.clear();
    this.setPlayback(STOPPED);
    for (const z of list) this.setPlayback(z);
  }

  /**
   * One playback changed (its event), or, without a PlaybackID, the whole picture read in
   * full: a Stopped one then clears every zone.
   */
  setPlayback(snapshot: PlaybackSnapshot): void {
    const id = snapshot.playbackId ?? '';
    // Who is in a playing zone, before and after: one pass over the zones (a party holds every speaker).
    const before = this.playingIds();
    if (snapshot.state === 'PlayerStateStopped') {
      if (snapshot.playbackId === undefined) this.zones.clear();
      else this.zones.delete(id);
    } else {
      if (snapshot.playbackId === undefined) this.zones.clear();
      this.zones.set(id, snapshot);
    }
    const after = this.playingIds();
    for (const d of this.devices.values()) {
      const own = this.ownPlaying.has(d.DeviceID);
      // A speaker playing its own media stays playing when a zone elsewhere changes.
      const now = d.Active && (own || after.has(d.DeviceID));
      if (now !== d.IsPlaying) this.upsert({ ...d, IsPlaying: now });
      // Taken over by a zone, or left to its own media again (busy): its record is the same, what it shows is not.
      else if (d.Active && own && before.has(d.DeviceID) !== after.has(d.DeviceID)) this.onChange({ kind: 'device', device: d });
    }
    this.onChange({ kind: 'playback', playback: snapshot });
  }

  /** The speakers whose zone (the first that lists them, as playbackOf) is playing. */
  private playingIds(): Set<string> {
    const seen = new Set<string>();
    const playing = new Set<string>();
    for (const z of this.zones.values()) {
      for (const d of z.deviceIds) {
        if (seen.has(d)) continue;
        seen.add(d);
        if (z.state === 'PlayerStatePlaying') playing.add(d);
      }
    }
    return playing;
  }

  /** One wire event (SSE, the in-process feed, the cloud link): the same shape everywhere. */
  apply(e: WireEvent): void {
    switch (e.type) {
      case 'device': {
        const d = e.data.device;
        // The record carries the speaker's own IsPlaying; the playback decides what front ends show.
        const inPlayback = this.inPlayingZone(d.DeviceID);
        this.noteOwn(d);
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
        this.setMuted(deviceId, muted);
        const d = this.devices.get(deviceId);
        if (d) this.onChange({ kind: 'device', device: d });
        break;
      }
      case 'announcement': {
        const a = e.data;
        for (const id of a.deviceIds) {
          if (a.phase === 'started') this.announcingIds.set(id, a.announcementId);
          else if (this.announcingIds.get(id) === a.announcementId) this.announcingIds.delete(id);
          else continue;
          const d = this.devices.get(id);
          if (d) this.onChange({ kind: 'device', device: d });
        }
        break;
      }
      case 'playbackState':
        this.setPlayback(e.data);
        break;
      case 'playbackTime': {
        const id = e.data.playbackId ?? '';
        const z = this.zones.get(id);
        if (z) this.zones.set(id, { ...z, timeElapsed: e.data.timeElapsed });
        this.onChange({ kind: 'time', timeElapsed: e.data.timeElapsed, ...(e.data.playbackId ? { playbackId: e.data.playbackId } : {}) });
        break;
      }
      default:
        break;
    }
  }

  /** The speaker's own IsPlaying, as the hub's record (device_list, a device event) says it. */
  private noteOwn(d: DeviceRecord): void {
    if (d.Active && d.IsPlaying) this.ownPlaying.add(d.DeviceID);
    else this.ownPlaying.delete(d.DeviceID);
  }

  private upsert(d: DeviceRecord): void {
    const old = this.devices.get(d.DeviceID);
    this.devices.set(d.DeviceID, d);
    if (!old || JSON.stringify(old) !== JSON.stringify(d)) this.onChange({ kind: 'device', device: d });
  }
}
