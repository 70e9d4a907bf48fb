import type { AnnouncementEvent, DeviceRecord, PlaybackSnapshot } from '../core/events';
import type { ExtensionContext } from '../extensions/extension';
import type { HubWireEvent } from '../hub-client/connection';
import { FrontEndHubPort, type ZoneRef } from '../hub-client/front-end-port';
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

export { HubCommandError, type ZoneRef } from '../hub-client/front-end-port';

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

/**
 * The adapter over the hub-client layer's connection to the hub this extension runs in
 * (operations in its trusted session, the bounded wire-event feed with resync): the shared
 * read model and commands (src/hub-client/front-end-port.ts), the renderers' changes here.
 */
export class ClientHubPort extends FrontEndHubPort<SpeakerView, HubChange> implements HubPort {
  constructor(ctx: ExtensionContext, log: Logger) {
    super(ctx, log, 'DLNA');
  }

  protected viewOf(d: DeviceRecord): SpeakerView {
    return viewOf(d);
  }

  protected speakersLoaded(): void {
    this.onChange({ kind: 'speakers' });
  }

  muted(id: string): boolean | undefined {
    return this.mutes.get(id);
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

  protected event(e: HubWireEvent): void {
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
      case 'playbackState':
        // Every renderer reads its zone again on this change, so which speakers it touched is not needed.
        this.zoneChanged(e.data);
        this.onChange({ kind: 'playback', snapshot: e.data });
        return;
      case 'playbackTime': {
        this.zoneTime(e.data.playbackId, e.data.timeElapsed);
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

function viewOf(d: DeviceRecord): SpeakerView {
  return { id: d.DeviceID, name: d.DeviceName, modelName: d.ModelName, active: d.Active, volume: d.Volume };
}
