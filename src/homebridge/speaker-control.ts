import { HubError } from '../core/errors';
import type { HubConnection } from './hub-connection';
import type { HubState } from './hub-state';
import type { MediaChoice } from './config';

/**
 * What HomeKit's switches and sliders mean for one speaker, expressed in the operation table's
 * operations (so the embedded and the remote hub behave the same):
 *
 * - off: the speaker alone in a playing hub media → pause_play (resumable); alone in web
 *   media/TTS → pause_play stops it; sharing the playback with others → it leaves it
 *   (remove_device_from_session) and the others play on.
 * - on: paused hub media that includes it → it resumes (only it); something else playing →
 *   it joins in at the current position (add_device_to_session); otherwise it plays its
 *   default (a media item or a stream URL).
 */
export class SpeakerControl {
  /** Last volume before a Mute, per speaker, so unmuting restores it. */
  private readonly beforeMute = new Map<string, number>();

  constructor(
    private readonly hub: HubConnection,
    private readonly state: HubState,
    private readonly defaultMediaOf: (deviceId: string) => MediaChoice | undefined,
  ) {}

  async setPlaying(id: string, on: boolean): Promise<void> {
    const d = this.available(id);
    const pb = this.state.playback;
    const member = pb.deviceIds.includes(id);
    if (!on) {
      if (pb.state !== 'PlayerStatePlaying' || !member) return;
      if (pb.deviceIds.length === 1) await this.hub.call('pause_play');
      else await this.hub.call('remove_device_from_session', { DeviceID: id });
      return;
    }
    if (pb.state === 'PlayerStatePlaying' && member) return;
    if (pb.state === 'PlayerStatePaused' && member && pb.kind === 'hub' && pb.persistentId) {
      await this.hub.call('resume_hub_media_selected_speakers', { PersistentID: pb.persistentId, DeviceIDList: [id] });
      return;
    }
    if (pb.state === 'PlayerStatePlaying') {
      await this.hub.call('add_device_to_session', { DeviceID: id });
      return;
    }
    await this.playDefault(d.DeviceID);
  }

  private async playDefault(id: string): Promise<void> {
    const media = await this.defaultMedia(id);
    if ('url' in media) await this.hub.call('play_web_media_selected_speakers', { MediaUrl: media.url, DeviceIDList: [id] });
    else await this.hub.call('play_hub_media_selected_speakers', { PersistentID: media.persistentId, DeviceIDList: [id] });
  }

  /** The speaker's (or, for '', the global) defaultMedia; with none configured, the library's first item. */
  private async defaultMedia(id: string): Promise<{ url: string } | { persistentId: string }> {
    const choice = this.defaultMediaOf(id);
    if (choice?.url) return { url: choice.url };
    if (choice?.persistentId) return { persistentId: choice.persistentId };
    // Nothing configured: the first item of the library (a fresh hub has its sample tracks).
    const list = (await this.hub.call('media_list')).MediaList as { PersistentID: string }[] | undefined;
    const first = list?.[0]?.PersistentID;
    if (!first) throw new HubError('MediaNotFound', 'Nothing to play: the media library is empty and no defaultMedia is configured.');
    return { persistentId: first };
  }

  async setVolume(id: string, volume: number): Promise<void> {
    this.available(id);
    await this.hub.call('set_volume_device', { DeviceID: id, Volume: volume });
  }

  /** Mute is volume 0 (the hub's common ground across drivers); unmute restores the level. */
  async setMute(id: string, mute: boolean): Promise<void> {
    const d = this.available(id);
    if (mute) {
      if (d.Volume > 0) this.beforeMute.set(id, d.Volume);
      await this.setVolume(id, 0);
    } else if (d.Volume === 0) {
      await this.setVolume(id, this.beforeMute.get(id) ?? 20);
    }
  }

  /** Every available speaker plays together: joining what plays, else the global default. */
  async setParty(on: boolean): Promise<void> {
    if (!on) {
      await this.hub.call('stop_play');
      return;
    }
    if (this.state.playback.state === 'PlayerStatePlaying') {
      await this.hub.call('set_party_mode');
      return;
    }
    const media = await this.defaultMedia('');
    if ('url' in media) await this.hub.call('play_web_media_party_mode', { MediaUrl: media.url });
    else await this.hub.call('play_hub_media_party_mode', { PersistentID: media.persistentId });
  }

  /** Party mode reads on while a playback plays on every available speaker. */
  partyOn(): boolean {
    const pb = this.state.playback;
    if (pb.state !== 'PlayerStatePlaying') return false;
    const available = this.state.all().filter((d) => d.Active);
    return available.length > 0 && available.every((d) => pb.deviceIds.includes(d.DeviceID));
  }

  private available(id: string) {
    const d = this.state.device(id);
    if (!d) throw new HubError('DeviceNotFound', `The hub does not list speaker ${id}.`);
    if (!d.Active) throw new HubError('DeviceUnavailable', `${d.DeviceName} is not reachable now.`);
    return d;
  }
}
