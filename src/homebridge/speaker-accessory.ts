import type { DeviceRecord } from '../core/events';
import type { ServiceKind } from './config';
import type { Characteristic, CharacteristicType, Hap, Logging, PlatformAccessory, Service, ServiceType } from './homebridge-api';
import { guard, unreachable } from './hap-status';
import type { HubReadModel } from '../hub-client/read-model';
import { homekitName } from './names';
import type { SpeakerControl } from './speaker-control';
import { percentToVolume, volumeToPercent } from './volume-map';

/** A write still running after this answers HomeKit anyway (its 3 s "slow to respond" limit); events correct it if it fails. */
const WRITE_ANSWER_MS = 2500;

export interface SpeakerAccessoryDeps {
  hap: Hap;
  log: Logging;
  state: HubReadModel;
  control: SpeakerControl;
}

/**
 * One speaker as one HomeKit accessory, with the configured service: lightbulb (On +
 * Brightness), fan (On + RotationSpeed), switch (On), speaker (Mute + Volume). Every service
 * carries StatusFault, which follows the speaker's availability. Reads answer from the cached
 * state; an unreachable speaker answers "No Response".
 */
export class SpeakerAccessory {
  readonly deviceId: string;
  private readonly service: Service;

  constructor(
    private readonly deps: SpeakerAccessoryDeps,
    readonly accessory: PlatformAccessory,
    readonly kind: ServiceKind,
  ) {
    this.deviceId = String(accessory.context.deviceId);
    this.service = this.setUpService();
    this.setUpInformation();
    this.refresh();
  }

  private get record(): DeviceRecord | undefined {
    return this.deps.state.device(this.deviceId);
  }

  private serviceType(kind: ServiceKind): ServiceType {
    const S = this.deps.hap.Service;
    return { lightbulb: S.Lightbulb, fan: S.Fan, switch: S.Switch, speaker: S.Speaker }[kind];
  }

  private setUpService(): Service {
    const { hap } = this.deps;
    const C = hap.Characteristic;
    // A speaker whose configured service changed keeps its accessory (and UUID): swap the service.
    for (const kind of ['lightbulb', 'fan', 'switch', 'speaker'] as const) {
      const existing = this.accessory.getService(this.serviceType(kind));
      if (existing && kind !== this.kind) this.accessory.removeService(existing);
    }
    const type = this.serviceType(this.kind);
    const service = this.accessory.getService(type) ?? this.accessory.addService(type, this.accessory.displayName);
    if (!service.testCharacteristic(C.StatusFault)) service.addOptionalCharacteristic(C.StatusFault);
    service.getCharacteristic(C.StatusFault).onGet(guard(hap, this.deps.log, this.what('StatusFault'), () => (this.record?.Active ? 0 : 1)));

    if (this.kind === 'speaker') {
      this.handle(
        service,
        C.Mute,
        () => this.deps.state.muted(this.deviceId),
        (v) => this.deps.control.setMute(this.deviceId, !!v),
      );
      if (!service.testCharacteristic(C.Volume)) service.addOptionalCharacteristic(C.Volume);
      this.handle(
        service,
        C.Volume,
        () => volumeToPercent(this.live().Volume),
        (v) => this.deps.control.setVolume(this.deviceId, percentToVolume(Number(v))),
      );
      return service;
    }
    this.handle(
      service,
      C.On,
      () => this.deps.state.isPlaying(this.live().DeviceID),
      (v) => this.deps.control.setPlaying(this.deviceId, !!v),
    );
    const level = this.kind === 'lightbulb' ? C.Brightness : this.kind === 'fan' ? C.RotationSpeed : undefined;
    if (level) {
      this.handle(
        service,
        level,
        () => volumeToPercent(this.live().Volume),
        (v) => this.deps.control.setVolume(this.deviceId, percentToVolume(Number(v))),
      );
    }
    return service;
  }

  private handle(service: Service, type: CharacteristicType, read: () => boolean | number, write: (v: unknown) => Promise<void>): Characteristic {
    const { hap, log } = this.deps;
    const name = this.what(String((type as { name?: string }).name ?? type.UUID));
    return service
      .getCharacteristic(type)
      .onGet(guard(hap, log, `${name} read`, read))
      .onSet(
        guard(hap, log, `${name} write`, async (v: unknown) => {
          const running = write(v);
          const late = new Promise<'late'>((r) => setTimeout(() => r('late'), WRITE_ANSWER_MS).unref());
          const first = await Promise.race([running.then(() => 'done' as const), late]);
          if (first === 'late') {
            running.then(
              () => undefined,
              (e) => {
                log.warn(`${name} write failed late: ${e instanceof Error ? e.message : String(e)}`);
                this.refresh();
              },
            );
          }
        }),
      );
  }

  /** The speaker's record, or "No Response" when it is unknown or not reachable. */
  private live(): DeviceRecord {
    const d = this.record;
    if (!d || !d.Active) throw unreachable(this.deps.hap);
    return d;
  }

  private setUpInformation(): void {
    const { hap } = this.deps;
    const C = hap.Characteristic;
    const info = this.accessory.getService(hap.Service.AccessoryInformation) ?? this.accessory.addService(hap.Service.AccessoryInformation);
    const d = this.record ?? (this.accessory.context.record as DeviceRecord | undefined);
    info.setCharacteristic(C.Manufacturer, 'SpeakerHub');
    info.setCharacteristic(C.Model, homekitName(d?.ModelName ?? '', 'Speaker'));
    info.setCharacteristic(C.SerialNumber, this.deviceId);
    const fw = /^\d+(\.\d+){0,2}/.exec(d?.Version ?? '');
    if (fw) info.setCharacteristic(C.FirmwareRevision, fw[0]);
  }

  /** Pushes the cached state to HomeKit as characteristic events. Returns whether the name changed. */
  refresh(): boolean {
    const { hap } = this.deps;
    const C = hap.Characteristic;
    const d = this.record;
    const s = this.service;
    s.updateCharacteristic(C.StatusFault, d?.Active ? 0 : 1);
    if (!d) return false;
    if (this.kind === 'speaker') {
      s.updateCharacteristic(C.Mute, this.deps.state.muted(this.deviceId));
      s.updateCharacteristic(C.Volume, volumeToPercent(d.Volume));
    } else {
      s.updateCharacteristic(C.On, d.Active && this.deps.state.isPlaying(d.DeviceID));
      if (this.kind === 'lightbulb') s.updateCharacteristic(C.Brightness, volumeToPercent(d.Volume));
      if (this.kind === 'fan') s.updateCharacteristic(C.RotationSpeed, volumeToPercent(d.Volume));
    }
    const name = homekitName(d.DeviceName, `Speaker ${d.DeviceID.slice(-4)}`);
    if (name === this.accessory.displayName) return false;
    this.accessory.displayName = name;
    s.updateCharacteristic(C.Name, name);
    this.accessory.getService(hap.Service.AccessoryInformation)?.updateCharacteristic(C.Name, name);
    return true;
  }

  private what(characteristic: string): string {
    return `${this.accessory.displayName} ${characteristic}`;
  }
}
