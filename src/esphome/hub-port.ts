import type { AnnouncementEvent, DeviceRecord, PlaybackSnapshot } from '../core/events';
import type { ExtensionContext } from '../extensions/extension';
import type { HubWireEvent } from '../hub-client/connection';
import { FrontEndHubPort } from '../hub-client/front-end-port';
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

export { HubCommandError } from '../hub-client/front-end-port';

export class EsphomeHubPort extends FrontEndHubPort<SpeakerView, HubChange> {
  /** Announcements started and not yet over, by speaker. */
  private readonly announcing = new Map<string, Set<string>>();
  /** The last web URL each speaker played (PLAY after STOP plays it again). */
  private readonly lastUrl = new Map<string, string>();

  constructor(ctx: ExtensionContext, log: Logger) {
    super(ctx, log, 'ESPHome');
  }

  protected viewOf(d: DeviceRecord): SpeakerView {
    return viewOf(d);
  }

  protected speakersLoaded(): void {
    this.onChange({ kind: 'speakers' });
  }

  protected override forgetSpeaker(id: string): void {
    this.announcing.delete(id);
    this.lastUrl.delete(id);
  }

  muted(id: string): boolean {
    return this.mutes.get(id) ?? false;
  }

  isAnnouncing(id: string): boolean {
    return (this.announcing.get(id)?.size ?? 0) > 0;
  }

  lastUrlOf(id: string): string | undefined {
    return this.lastUrl.get(id);
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

  protected event(e: HubWireEvent): void {
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
    const touched = this.zoneChanged(p);
    if (p.playbackId !== undefined && p.state !== 'PlayerStateStopped' && p.kind === 'web' && p.url) {
      for (const d of p.deviceIds) this.lastUrl.set(d, p.url);
    }
    this.onChange({ kind: 'speaker', ids: touched });
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
