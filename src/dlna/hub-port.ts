import type { AnnouncementEvent, DeviceRecord, PlaybackSnapshot } from '../core/events';
import type { ExtensionContext } from '../extensions/extension';
import type { WireEvent, WireSubscription } from '../extensions/wire-events';
import type { Logger } from '../logger';

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
  | { kind: 'speaker'; id: string }
  | { kind: 'volume'; id: string; volume: number }
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

export interface HubPort {
  start(onChange: (c: HubChange) => void): Promise<void>;
  stop(): Promise<void>;
  speakers(): SpeakerView[];
  speaker(id: string): SpeakerView | undefined;
  playback(): PlaybackSnapshot;
  playOn(deviceIds: string[], url: string): Promise<void>;
  playParty(url: string): Promise<void>;
  pause(): Promise<void>;
  stopPlay(): Promise<void>;
  setVolume(id: string, volume: number): Promise<void>;
  setVolumeAll(volume: number): Promise<void>;
  /** Mute when the hub has it; undefined when it cannot tell. */
  muted(id: string): boolean | undefined;
  setMute(id: string, mute: boolean): Promise<void>;
  /** Starts an announcement of url on one speaker (volume 0–50 while it plays); its AnnouncementID. */
  announce(id: string, url: string, volume?: number): Promise<string>;
}

const MAX_QUEUED = 2000;
const STOPPED: PlaybackSnapshot = { state: 'PlayerStateStopped', timeElapsed: -1, deviceIds: [] };

/** The adapter over the extension context (dispatch with a trusted session, wire events). */
export class ContextHubPort implements HubPort {
  private session?: string;
  private sub?: WireSubscription;
  private readonly byId = new Map<string, SpeakerView>();
  private snapshot: PlaybackSnapshot = STOPPED;
  private onChange: (c: HubChange) => void = () => undefined;
  private stopped = false;

  constructor(
    private readonly ctx: ExtensionContext,
    private readonly log: Logger,
  ) {}

  async start(onChange: (c: HubChange) => void): Promise<void> {
    this.onChange = onChange;
    this.session = this.ctx.openTrustedSession();
    this.subscribe();
    await this.load();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.sub?.close();
    this.sub = undefined;
    if (this.session) await this.ctx.dispatch('close_session', { SessionToken: this.session });
    this.session = undefined;
  }

  speakers(): SpeakerView[] {
    return [...this.byId.values()];
  }

  speaker(id: string): SpeakerView | undefined {
    return this.byId.get(id);
  }

  playback(): PlaybackSnapshot {
    return this.snapshot;
  }

  async playOn(deviceIds: string[], url: string): Promise<void> {
    await this.run('play_web_media_selected_speakers', { MediaUrl: url, DeviceIDList: deviceIds.join(',') });
  }

  async playParty(url: string): Promise<void> {
    await this.run('play_web_media_party_mode', { MediaUrl: url });
  }

  async pause(): Promise<void> {
    await this.run('pause_play', {});
  }

  async stopPlay(): Promise<void> {
    await this.run('stop_play', {});
  }

  async setVolume(id: string, volume: number): Promise<void> {
    await this.run('set_volume_device', { DeviceID: id, Volume: String(volume) });
  }

  async setVolumeAll(volume: number): Promise<void> {
    await this.run('set_volume', { Volume: String(volume) });
  }

  muted(_id: string): boolean | undefined {
    return undefined;
  }

  async setMute(_id: string, _mute: boolean): Promise<void> {
    throw new HubCommandError('NotSupported', 'this hub has no mute operation');
  }

  async announce(id: string, url: string, volume?: number): Promise<string> {
    const body = await this.run('announce', { MediaUrl: url, DeviceIDList: id, ...(volume !== undefined ? { Volume: String(volume) } : {}) });
    return String(body.AnnouncementID);
  }

  private async run(operation: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    const r = await this.ctx.dispatch(operation, { SessionToken: this.session, ...params });
    if (!r.ok) throw new HubCommandError(r.error.code, r.error.message);
    return r.body;
  }

  private subscribe(): void {
    this.sub = this.ctx.subscribe((e) => this.event(e), {
      maxQueued: MAX_QUEUED,
      initial: true,
      onOverflow: () => {
        if (this.stopped) return;
        // Events were lost: start over from the hub's current state.
        this.log.warn('DLNA event queue overflowed; resynchronizing');
        this.subscribe();
        void this.load().catch((e: Error) => this.log.warn({ err: e.message }, 'DLNA resync failed'));
      },
    });
  }

  private async load(): Promise<void> {
    const body = await this.run('device_list', {});
    const list = (body.DeviceList ?? []) as DeviceRecord[];
    const seen = new Set<string>();
    for (const d of list) {
      seen.add(d.DeviceID);
      this.byId.set(d.DeviceID, viewOf(d));
    }
    for (const id of [...this.byId.keys()]) if (!seen.has(id)) this.byId.delete(id);
    this.onChange({ kind: 'speakers' });
  }

  private event(e: WireEvent): void {
    switch (e.type) {
      case 'device': {
        const before = this.byId.get(e.data.device.DeviceID);
        const view = viewOf(e.data.device);
        this.byId.set(view.id, view);
        if (!before || before.active !== view.active || before.name !== view.name) this.onChange({ kind: 'speakers' });
        else this.onChange({ kind: 'speaker', id: view.id });
        if (before && before.volume !== view.volume) this.onChange({ kind: 'volume', id: view.id, volume: view.volume });
        return;
      }
      case 'volume': {
        const s = this.byId.get(e.data.deviceId);
        if (s) s.volume = e.data.volume;
        this.onChange({ kind: 'volume', id: e.data.deviceId, volume: e.data.volume });
        return;
      }
      case 'playbackState':
        this.snapshot = e.data;
        this.onChange({ kind: 'playback', snapshot: e.data });
        return;
      case 'playbackTime':
        this.snapshot = { ...this.snapshot, timeElapsed: e.data.timeElapsed };
        this.onChange({ kind: 'time', timeElapsed: e.data.timeElapsed, deviceIds: e.data.deviceIds });
        return;
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
