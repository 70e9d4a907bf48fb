import { HubError } from '../core/errors';
import type { AnnouncementPreset } from './config';
import type { Hap, Logging, PlatformAccessory, Service } from './homebridge-api';
import { guard } from './hap-status';
import type { HubConnection } from '../hub-client/connection';

type OperationParams = Record<string, string | number | string[]>;
import type { HubReadModel } from '../hub-client/read-model';
import type { SpeakerControl } from './speaker-control';

/** How long a stateless switch shows "on" before it turns itself off (HomeKit sees the flip). */
const MOMENTARY_MS = 1000;

function switchService(hap: Hap, accessory: PlatformAccessory): Service {
  const service = accessory.getService(hap.Service.Switch) ?? accessory.addService(hap.Service.Switch, accessory.displayName);
  const info = accessory.getService(hap.Service.AccessoryInformation) ?? accessory.addService(hap.Service.AccessoryInformation);
  info.setCharacteristic(hap.Characteristic.Manufacturer, 'SpeakerHub');
  return service;
}

/** The parameters of the `announce` operation for a preset; speakers named by DeviceName resolve to DeviceIDs. */
export function announceParams(preset: AnnouncementPreset, state: HubReadModel): OperationParams {
  const p: OperationParams = {};
  if (preset.text !== undefined) p.Text = preset.text;
  if (preset.mediaUrl !== undefined) p.MediaUrl = preset.mediaUrl;
  if (preset.persistentId !== undefined) p.PersistentID = preset.persistentId;
  if (preset.speakers?.length) {
    p.DeviceIDList = preset.speakers.map((s) => {
      const d = state.resolve(s);
      if (!d) throw new HubError('DeviceNotFound', `Announcement "${preset.name}": no speaker is named or numbered "${s}".`);
      return d.DeviceID;
    });
  }
  if (preset.volume !== undefined) p.Volume = preset.volume;
  if (preset.chime !== undefined) p.Chime = String(preset.chime);
  if (preset.priority !== undefined) p.Priority = preset.priority;
  if (preset.voice !== undefined) p.Voice = preset.voice;
  if (preset.mode !== undefined) p.Mode = preset.mode;
  if (preset.duckLevel !== undefined) p.DuckLevel = preset.duckLevel;
  if (preset.fadeMs !== undefined) p.FadeMs = preset.fadeMs;
  return p;
}

/**
 * An announcement preset as a stateless switch: on → the hub's `announce` operation (which
 * answers at once and restores the speakers afterwards), then the switch turns itself off.
 */
export class AnnouncementSwitch {
  private readonly service: Service;
  private timer?: NodeJS.Timeout;

  constructor(
    hap: Hap,
    log: Logging,
    readonly accessory: PlatformAccessory,
    private readonly preset: AnnouncementPreset,
    hub: HubConnection,
    state: HubReadModel,
  ) {
    this.service = switchService(hap, accessory);
    this.service
      .getCharacteristic(hap.Characteristic.On)
      .onGet(() => false)
      .onSet(
        guard(hap, log, `Announcement "${preset.name}"`, async (v: unknown) => {
          if (!v) return;
          const res = await hub.run('announce', announceParams(this.preset, state));
          log.info(`Announcement "${preset.name}" started (AnnouncementID ${String(res.AnnouncementID ?? '?')})`);
          this.turnOffSoon(hap);
        }),
      );
  }

  private turnOffSoon(hap: Hap): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.service.updateCharacteristic(hap.Characteristic.On, false), MOMENTARY_MS);
    this.timer.unref();
  }

  dispose(): void {
    clearTimeout(this.timer);
  }
}

/** "Party mode": on = every available speaker plays together; off = stop. */
export class PartySwitch {
  private readonly service: Service;

  constructor(
    private readonly hap: Hap,
    log: Logging,
    readonly accessory: PlatformAccessory,
    private readonly control: SpeakerControl,
  ) {
    this.service = switchService(hap, accessory);
    this.service
      .getCharacteristic(hap.Characteristic.On)
      .onGet(guard(hap, log, 'Party mode read', () => control.partyOn()))
      .onSet(guard(hap, log, 'Party mode', (v: unknown) => control.setParty(!!v)));
  }

  refresh(): void {
    this.service.updateCharacteristic(this.hap.Characteristic.On, this.control.partyOn());
  }
}
