import { HubError } from './errors';
import type { DeviceRecord, HubEventBus } from './events';
import type { Speaker, SpeakerDriver, SpeakerInfo } from '../drivers/driver';
import type { Logger } from '../logger';
import { redactText } from '../redact';
import { capabilityProblems } from '../drivers/capabilities';

/**
 * Every speaker the drivers know, keyed by DeviceID. A speaker that vanishes stays listed
 * with Active false (clients keep their DeviceIDs); drivers remove it only when they forget it.
 */
export class SpeakerRegistry {
  private readonly speakers = new Map<string, Speaker>();
  private readonly detach = new Map<string, () => void>();
  /**
   * The driver instance each speaker came from. Keyed by instance, not by driver name: two
   * drivers of one kind (two UPnP interfaces, two Snapcast setups) must each get their own
   * speakers in playGroup().
   */
  private readonly owners = new Map<Speaker, SpeakerDriver>();

  constructor(
    private readonly events: HubEventBus,
    private readonly logger: Logger,
  ) {}

  attachDriver(driver: SpeakerDriver): void {
    driver.on('speakerAdded', (s) => this.add(s, driver));
    driver.on('speakerRemoved', (s) => this.remove(s.id));
    for (const s of driver.speakers()) this.add(s, driver);
  }

  private add(speaker: Speaker, driver: SpeakerDriver): void {
    const clash = this.speakers.get(speaker.id);
    if (clash && clash !== speaker) {
      this.logger.error({ deviceId: speaker.id, drivers: [clash.driver, speaker.driver] }, 'two speakers share a DeviceID; keeping the first');
      return;
    }
    if (clash) return;
    this.speakers.set(speaker.id, speaker);
    this.owners.set(speaker, driver);
    const onAvailability = (available: boolean) =>
      this.events.emit('device', { reason: available ? 'DeviceAvailable' : 'DeviceUnavailable', device: this.record(speaker) });
    const onInfo = (changed: Partial<SpeakerInfo>) => {
      const onlyWifi = Object.keys(changed).every((k) => k === 'wifiSignalStrength');
      this.events.emit('device', { reason: onlyWifi ? 'WiFiSignalChanged' : 'SpeakerInfoUpdated', device: this.record(speaker) });
    };
    const onState = (_state: string, reason?: string, detail?: string) => {
      if (reason === 'error')
        this.events.emit('device', {
          reason: 'DeviceError',
          device: this.record(speaker),
          detail: detail === undefined ? undefined : redactText(detail),
        });
    };
    const onVolume = (volume: number) => this.events.emit('volume', { deviceId: speaker.id, volume });
    speaker.on('availability', onAvailability);
    speaker.on('info', onInfo);
    speaker.on('state', onState);
    speaker.on('volume', onVolume);
    this.detach.set(speaker.id, () => {
      speaker.off('availability', onAvailability);
      speaker.off('info', onInfo);
      speaker.off('state', onState);
      speaker.off('volume', onVolume);
    });
    this.logger.info({ deviceId: speaker.id, driver: speaker.driver, name: speaker.info().name }, 'speaker added');
    const problems = capabilityProblems(speaker, driver);
    if (problems.length)
      this.logger.error({ deviceId: speaker.id, driver: speaker.driver, problems }, 'driver bug: capabilities and methods disagree');
    if (speaker.available) this.events.emit('device', { reason: 'DeviceAvailable', device: this.record(speaker) });
  }

  private remove(id: string): void {
    const speaker = this.speakers.get(id);
    if (!speaker) return;
    this.detach.get(id)?.();
    this.detach.delete(id);
    this.speakers.delete(id);
    this.owners.delete(speaker);
    this.events.emit('device', { reason: 'DeviceUnavailable', device: { ...this.record(speaker), Active: false } });
  }

  get size(): number {
    return this.speakers.size;
  }

  all(): Speaker[] {
    return [...this.speakers.values()];
  }

  available(): Speaker[] {
    return this.all().filter((s) => s.available);
  }

  driverOf(speaker: Speaker): SpeakerDriver | undefined {
    return this.owners.get(speaker);
  }

  /**
   * Speakers grouped by the driver instance they came from (for one call per driver); those
   * whose driver `groups` rejects (or that have none) are grouped under undefined.
   */
  byDriver(speakers: Speaker[], groups: (d: SpeakerDriver) => boolean = () => true): Map<SpeakerDriver | undefined, Speaker[]> {
    const out = new Map<SpeakerDriver | undefined, Speaker[]>();
    for (const s of speakers) {
      const d = this.owners.get(s);
      const key = d && groups(d) ? d : undefined;
      out.set(key, [...(out.get(key) ?? []), s]);
    }
    return out;
  }

  find(id: string): Speaker | undefined {
    return this.speakers.get(id);
  }

  /** The speaker with that DeviceID, or DeviceNotFound. */
  get(id: string): Speaker {
    const s = this.speakers.get(id);
    if (!s) throw new HubError('DeviceNotFound', `No speaker has DeviceID ${id}.`, { parameter: 'DeviceID' });
    return s;
  }

  record(speaker: Speaker): DeviceRecord {
    const i = speaker.info();
    return {
      DeviceID: speaker.id,
      DeviceName: i.name,
      GroupName: i.groupName,
      GroupID: i.groupId,
      ModelName: i.modelName,
      Version: i.version,
      Role: i.role,
      MacAddress: i.macAddress,
      IPAddress: i.ipAddress,
      Port: i.port,
      Active: speaker.available,
      IsPlaying: speaker.available && speaker.state === 'playing',
      Volume: speaker.volume,
      WifiSignalStrength: i.wifiSignalStrength,
    };
  }
}
