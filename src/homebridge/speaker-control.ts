import { HubError } from '../core/errors';
import type { HubConnection } from '../hub-client/connection';
import type { HubReadModel } from '../hub-client/read-model';
import type { MediaChoice } from './config';

/**
 * What HomeKit's switches and sliders do to one speaker: the table's speaker commands
 * (set_speaker_power, set_mute_device, set_party), which define "on", "off", "mute" and
 * "party" once for every front end. HomeKit adds only its defaults (what plays when nothing
 * does) and refuses a speaker the hub does not list or cannot reach now, before asking.
 */
export class SpeakerControl {
  constructor(
    private readonly hub: HubConnection,
    private readonly state: HubReadModel,
    private readonly defaultMediaOf: (deviceId: string) => MediaChoice | undefined,
  ) {}

  async setPlaying(id: string, on: boolean): Promise<void> {
    this.available(id);
    await this.hub.run('set_speaker_power', { DeviceID: id, Power: on ? 'on' : 'off', ...mediaParams(this.defaultMediaOf(id)) });
  }

  async setVolume(id: string, volume: number): Promise<void> {
    this.available(id);
    await this.hub.run('set_volume_device', { DeviceID: id, Volume: volume });
  }

  async setMute(id: string, mute: boolean): Promise<void> {
    this.available(id);
    await this.hub.run('set_mute_device', { DeviceID: id, Mute: mute ? 'true' : 'false' });
  }

  /** Every available speaker plays together: joining what plays, else the global default. */
  async setParty(on: boolean): Promise<void> {
    await this.hub.run('set_party', { Party: on ? 'on' : 'off', ...(on ? mediaParams(this.defaultMediaOf('')) : {}) });
  }

  partyOn(): boolean {
    return this.state.partyOn();
  }

  private available(id: string) {
    const d = this.state.device(id);
    if (!d) throw new HubError('DeviceNotFound', `The hub does not list speaker ${id}.`);
    if (!d.Active) throw new HubError('DeviceUnavailable', `${d.DeviceName} is not reachable now.`);
    return d;
  }
}

/** A configured default as the speaker commands take it (none: the hub plays its library's first item). */
function mediaParams(choice: MediaChoice | undefined): Record<string, string> {
  if (choice?.url) return { MediaUrl: choice.url };
  if (choice?.persistentId) return { PersistentID: choice.persistentId };
  return {};
}
