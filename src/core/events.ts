import { EventEmitter } from 'node:events';

/** Wire-shaped device record (compatibility.md: numbers and booleans keep their JSON types). */
export interface DeviceRecord {
  DeviceID: string;
  DeviceName: string;
  GroupName: string;
  GroupID: string;
  ModelName: string;
  Version: string;
  Role: number;
  MacAddress: string;
  IPAddress: string;
  Port: number;
  Active: boolean;
  IsPlaying: boolean;
  Volume: number;
  WifiSignalStrength: number;
}

export type PlaybackState = 'PlayerStatePlaying' | 'PlayerStatePaused' | 'PlayerStateStopped';
export type MediaKind = 'hub' | 'web' | 'tts';

/** Reasons of the original hub's DeviceStateUpdated event (compatibility.md). */
export type DeviceReason = 'DeviceAvailable' | 'DeviceUnavailable' | 'DeviceError' | 'SpeakerInfoUpdated' | 'WiFiSignalChanged';

/** Why a playback stopped: its media ended, stop/pause of web media, a new play replaced it, every speaker failed, hub shutdown. */
export type PlaybackEndReason = 'ended' | 'stopped' | 'interrupted' | 'error' | 'shutdown';

export interface PlaybackSnapshot {
  /** Which playback (zone) this is: "pb-<n>"; absent when none is meant (nothing plays). */
  playbackId?: string;
  state: PlaybackState;
  /** Whole seconds; -1 when stopped. */
  timeElapsed: number;
  kind?: MediaKind;
  persistentId?: string;
  url?: string;
  title?: string;
  priority?: number;
  deviceIds: string[];
  /** Who started it: the starting session's public label (session_status SessionLabel). */
  owner?: string;
  /** When the play was asked for (ISO 8601). */
  since?: string;
  /** Why the playback stopped. */
  reason?: PlaybackEndReason;
}

/**
 * What announcement_status says (beyond the spec): queued, playing, waiting_restore (over on
 * every speaker, not yet put back: the restore runs, or waits for announcements queued
 * behind it on the same speaker), done (played and every speaker restored) or failed.
 * The transitions: src/core/announcement-states.ts.
 */
export type AnnouncementState = 'queued' | 'playing' | 'waiting_restore' | 'done' | 'failed';

/**
 * An announcement's life (beyond the spec): 'started' when its first speaker starts it,
 * 'ended' when it has played out (or was stopped) on every speaker (state waiting_restore),
 * 'restored' when every speaker is back to what it did before (state done), 'failed' when it
 * could not play at all.
 */
export interface AnnouncementEvent {
  announcementId: string;
  phase: 'started' | 'ended' | 'restored' | 'failed';
  state: AnnouncementState;
  deviceIds: string[];
  priority: number;
  reason?: string;
}

/** What the core tells front ends; MQTT, SSE, HomeKit and the cloud publish these. */
export interface HubEvents {
  playbackState: [PlaybackSnapshot];
  playbackTime: [{ timeElapsed: number; deviceIds: string[]; playbackId?: string }];
  device: [{ reason: DeviceReason; device: DeviceRecord; detail?: string }];
  volume: [{ deviceId: string; volume: number }];
  /** A speaker was muted or unmuted (set_mute_device; a driver's own mute or, without one, volume 0 with restore). */
  mute: [{ deviceId: string; muted: boolean }];
  /** A session's playback session changed (session: its public label, never the token). */
  selection: [{ deviceIds: string[]; session?: string }];
  announcement: [AnnouncementEvent];
}

/**
 * Every event name of HubEvents, at run time (the wire-event feed subscribes to each).
 * The type check below fails to compile when an event is added to HubEvents but not here.
 */
export const HUB_EVENT_NAMES = [
  'playbackState',
  'playbackTime',
  'device',
  'volume',
  'mute',
  'selection',
  'announcement',
] as const satisfies readonly (keyof HubEvents)[];
type Unlisted = Exclude<keyof HubEvents, (typeof HUB_EVENT_NAMES)[number]>;
const everyEventListed: [Unlisted] extends [never] ? true : Unlisted = true;
void everyEventListed;

export type ListenerFault = (err: unknown, event: string) => void;

/**
 * The core's event bus. Core code emits inside state changes, so a listener that throws
 * must never reach the emitter (it would fail a play while speakers play, or a hub stop):
 * each listener runs guarded, and a fault is reported to `onFault` and skipped.
 */
export class HubEventBus extends EventEmitter<HubEvents> {
  constructor(private readonly onFault: ListenerFault = () => undefined) {
    super();
    // Every SSE client, MQTT bridge and HomeKit accessory listens; that is not a leak.
    this.setMaxListeners(0);
  }

  override emit<K extends keyof HubEvents>(event: K, ...args: HubEvents[K]): boolean {
    const listeners = this.rawListeners(event) as ((...a: unknown[]) => void)[];
    for (const fn of listeners) {
      try {
        fn.apply(this, args);
      } catch (err) {
        try {
          this.onFault(err, String(event));
        } catch {
          /* a faulty fault reporter must not break the core either */
        }
      }
    }
    return listeners.length > 0;
  }
}
