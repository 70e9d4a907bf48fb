import type { DeviceRecord } from '../core/events';
import { parsePlatformConfig, type MediaChoice, type PlatformSettings, type ServiceKind } from './config';
import type { HubConnection } from '../hub-client/connection';
import type { EmbeddedConnection } from '../hub-client/embedded';
import { HubReadModel } from '../hub-client/read-model';
import { RemoteConnection } from '../hub-client/remote';
import { PLATFORM_NAME, PLUGIN_NAME, type API, type Logging, type PlatformAccessory, type PlatformConfig } from './homebridge-api';
import { homekitName } from './names';
import { SpeakerAccessory } from './speaker-accessory';
import { SpeakerControl } from './speaker-control';
import { AnnouncementSwitch, PartySwitch } from './switches';

/** The hub's full speaker list is re-read this often (and after every reconnect or overflow). */
const RESYNC_MS = 5 * 60_000;
/** lastSeen in the accessory cache is rewritten at most this often per speaker. */
const LAST_SEEN_WRITE_MS = 60 * 60_000;
/** Events queued for HomeKit before the subscription counts as overflowing (then: resync). */
const MAX_QUEUED_EVENTS = 10_000;

type AccessoryKind = 'speaker' | 'announcement' | 'party';

/**
 * The `SpeakerHub` dynamic platform: one accessory per speaker the hub lists (stable UUID from
 * its DeviceID, restored from Homebridge's cache, renamed in step, removed once gone for
 * good), announcement switches and an optional party switch.
 */
export class SpeakerHubPlatform {
  private readonly cached = new Map<string, PlatformAccessory>();
  private readonly speakers = new Map<string, SpeakerAccessory>();
  private readonly switches: (AnnouncementSwitch | PartySwitch)[] = [];
  private readonly state = new HubReadModel();
  private settings?: PlatformSettings;
  private hub?: HubConnection;
  private control?: SpeakerControl;
  private resyncTimer?: NodeJS.Timeout;
  private unfollow?: () => void;
  private stopped = false;

  constructor(
    private readonly log: Logging,
    config: PlatformConfig,
    private readonly api: API,
  ) {
    const parsed = parsePlatformConfig(config);
    if (!parsed.ok) {
      log.error(`SpeakerHub starts nothing: its configuration has problems:\n  ${parsed.problems.join('\n  ')}`);
      return;
    }
    this.settings = parsed.config;
    api.on('didFinishLaunching', () => {
      this.start().catch((e) => log.error(`SpeakerHub could not start: ${e instanceof Error ? e.message : String(e)}`));
    });
    api.on('shutdown', () => {
      this.stop().catch((e) => log.warn(`SpeakerHub stop: ${e instanceof Error ? e.message : String(e)}`));
    });
  }

  /** Homebridge hands over each cached accessory before didFinishLaunching. */
  configureAccessory(accessory: PlatformAccessory): void {
    this.cached.set(accessory.UUID, accessory);
  }

  private async start(): Promise<void> {
    const s = this.settings!;
    if (s.hub.mode === 'embedded' && !s.hub.drivers?.length) {
      this.log.warn('No speaker drivers are configured (hub.drivers): SpeakerHub starts nothing. Choose upnp, snapcast or virtual, or a remote hub.');
      return;
    }
    this.hub = s.hub.mode === 'remote' ? this.remoteHub(s) : this.embeddedHub(s);
    this.control = new SpeakerControl(this.hub, this.state, (id) => this.defaultMediaOf(id));
    this.state.on('device', (d) => this.onDevice(d));
    this.state.on('missing', (id) => this.speakerOf(id)?.refresh());
    this.state.on('playback', () => this.refreshAll());
    this.state.on('synced', (list) => this.reconcile(list));
    // Cached speakers answer at once ("No Response" until the hub lists them again).
    for (const acc of this.cached.values()) {
      if (acc.context.kind === 'speaker' && !this.hidden(String(acc.context.deviceId), String(acc.context.name ?? '')))
        this.attachSpeaker(acc, String(acc.context.name ?? ''));
    }
    this.setUpSwitches();
    this.unfollow = this.state.attach(this.hub, (what, err) =>
      this.log.error(`SpeakerHub: ${what} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`),
    );
    await this.hub.ready;
    if (this.stopped) return;
    if (this.hub.mode === 'embedded') {
      const running = (this.hub as EmbeddedConnection).hub;
      this.log.info(`SpeakerHub hub running in Homebridge${running?.url ? `; REST API at ${running.url}` : ''}`);
    }
    await this.resync();
    this.resyncTimer = setInterval(() => void this.resync(), RESYNC_MS);
    this.resyncTimer.unref();
  }

  /** The hub (and everything it loads) is required only when an embedded hub is configured. */
  private embeddedHub(s: PlatformSettings): EmbeddedConnection {
    const { EmbeddedConnection: Embedded } = require('../hub-client/embedded') as typeof import('../hub-client/embedded');
    const { embeddedHubConfig } = require('./hub-config') as typeof import('./hub-config');
    const { hubLoggerFor } = require('./log-bridge') as typeof import('./log-bridge');
    return new Embedded({
      config: embeddedHubConfig(s, this.api.user.storagePath()),
      logger: hubLoggerFor(this.log, s.hub.logLevel),
      name: 'homekit',
      maxQueued: MAX_QUEUED_EVENTS,
    });
  }

  /** A hub elsewhere: REST + its event stream, reconnecting with backoff (each reconnect re-reads the hub). */
  private remoteHub(s: PlatformSettings): RemoteConnection {
    const { hubLoggerFor } = require('./log-bridge') as typeof import('./log-bridge');
    const url = s.hub.url!;
    return new RemoteConnection({
      url,
      token: s.hub.token,
      logger: hubLoggerFor(this.log, s.hub.logLevel),
      timeoutMs: 10_000,
      minBackoffMs: 500,
      maxBackoffMs: 30_000,
      onState: (state, detail) => {
        if (state === 'connected') this.log.info(`Following the hub's events at ${url}`);
        else this.log.warn(`Hub events at ${url} unavailable (${detail}); retrying`);
      },
    });
  }

  private async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.resyncTimer);
    for (const sw of this.switches) if (sw instanceof AnnouncementSwitch) sw.dispose();
    this.unfollow?.();
    await this.hub?.close();
  }

  /** Re-reads the speaker list and playback state (start, reconnect, event overflow, periodically). */
  private async resync(): Promise<void> {
    if (!this.hub) return;
    await this.state.resync(this.hub).catch((e) => this.log.warn(`Could not read the hub's speakers: ${e instanceof Error ? e.message : String(e)}`));
  }

  private uuidOf(kind: AccessoryKind, key: string): string {
    return this.api.hap.uuid.generate(`speakerhub:${kind}:${key}`);
  }

  private speakerOf(deviceId: string): SpeakerAccessory | undefined {
    return this.speakers.get(this.uuidOf('speaker', deviceId));
  }

  private override(deviceId: string, name: string) {
    const lower = name.toLowerCase();
    return this.settings!.speakers.find((o) => (o.deviceId ? o.deviceId === deviceId : o.name!.toLowerCase() === lower));
  }

  private hidden(deviceId: string, name: string): boolean {
    return !!this.override(deviceId, name)?.hidden;
  }

  private serviceOf(deviceId: string, name: string): ServiceKind {
    return this.override(deviceId, name)?.service ?? this.settings!.service;
  }

  private defaultMediaOf(deviceId: string): MediaChoice | undefined {
    const d = this.state.device(deviceId);
    return (d && this.override(deviceId, d.DeviceName)?.defaultMedia) ?? this.settings!.defaultMedia;
  }

  private onDevice(d: DeviceRecord): void {
    if (this.hidden(d.DeviceID, d.DeviceName)) return;
    const existing = this.speakerOf(d.DeviceID);
    if (existing && existing.kind === this.serviceOf(d.DeviceID, d.DeviceName)) {
      if (existing.refresh()) {
        existing.accessory.context.name = d.DeviceName;
        this.api.updatePlatformAccessories([existing.accessory]);
        this.log.info(`Renamed accessory for speaker ${d.DeviceID} to "${existing.accessory.displayName}"`);
      }
    } else {
      this.addSpeaker(d);
    }
    this.refreshSwitches();
  }

  /** A speaker the hub lists: its cached accessory, or a new one registered with Homebridge. */
  private addSpeaker(d: DeviceRecord): void {
    const uuid = this.uuidOf('speaker', d.DeviceID);
    let acc = this.cached.get(uuid);
    const isNew = !acc;
    if (!acc) {
      acc = new this.api.platformAccessory(homekitName(d.DeviceName, `Speaker ${d.DeviceID.slice(-4)}`), uuid);
      this.cached.set(uuid, acc);
    }
    Object.assign(acc.context, {
      kind: 'speaker',
      deviceId: d.DeviceID,
      name: d.DeviceName,
      lastSeen: Date.now(),
      record: { ModelName: d.ModelName, Version: d.Version },
    });
    this.attachSpeaker(acc, d.DeviceName);
    if (isNew) {
      this.api.registerPlatformAccessories(PLUGIN_NAME, PLATFORM_NAME, [acc]);
      this.log.info(`Added accessory "${acc.displayName}" for speaker ${d.DeviceID}`);
    } else {
      this.api.updatePlatformAccessories([acc]);
    }
  }

  private attachSpeaker(acc: PlatformAccessory, name: string): void {
    const deviceId = String(acc.context.deviceId);
    const sa = new SpeakerAccessory(
      { hap: this.api.hap, log: this.log, state: this.state, control: this.control! },
      acc,
      this.serviceOf(deviceId, name),
    );
    this.speakers.set(acc.UUID, sa);
  }

  /** After a full list: note who was seen; remove accessories of speakers gone for good (or hidden). */
  private reconcile(list: DeviceRecord[]): void {
    const now = Date.now();
    const listed = new Set(list.map((d) => d.DeviceID));
    const touched: PlatformAccessory[] = [];
    const gone: PlatformAccessory[] = [];
    for (const acc of this.cached.values()) {
      if (acc.context.kind !== 'speaker') continue;
      const id = String(acc.context.deviceId);
      const name = String(acc.context.name ?? '');
      if (this.hidden(id, name)) {
        gone.push(acc);
      } else if (listed.has(id)) {
        if (now - Number(acc.context.lastSeen ?? 0) > LAST_SEEN_WRITE_MS) {
          acc.context.lastSeen = now;
          touched.push(acc);
        }
      } else if (now - Number(acc.context.lastSeen ?? 0) >= this.settings!.removeAfterHours * 3_600_000) {
        gone.push(acc);
      }
    }
    if (touched.length) this.api.updatePlatformAccessories(touched);
    if (gone.length) {
      for (const acc of gone) {
        this.cached.delete(acc.UUID);
        this.speakers.delete(acc.UUID);
        this.log.info(`Removed accessory "${acc.displayName}" (speaker ${String(acc.context.deviceId)} is gone or hidden)`);
      }
      this.api.unregisterPlatformAccessories(PLUGIN_NAME, PLATFORM_NAME, gone);
    }
  }

  private setUpSwitches(): void {
    const s = this.settings!;
    const wanted = new Set<string>();
    const register: PlatformAccessory[] = [];
    const make = (kind: AccessoryKind, key: string, name: string): PlatformAccessory => {
      const uuid = this.uuidOf(kind, key);
      wanted.add(uuid);
      let acc = this.cached.get(uuid);
      if (!acc) {
        acc = new this.api.platformAccessory(homekitName(name, 'Announcement'), uuid);
        this.cached.set(uuid, acc);
        register.push(acc);
      }
      acc.context.kind = kind;
      return acc;
    };
    for (const preset of s.announcements) {
      const acc = make('announcement', preset.name, preset.name);
      this.switches.push(new AnnouncementSwitch(this.api.hap, this.log, acc, preset, this.hub!, this.state));
    }
    if (s.partySwitch) {
      const acc = make('party', 'party', 'Party Mode');
      this.switches.push(new PartySwitch(this.api.hap, this.log, acc, this.control!));
    }
    const stale = [...this.cached.values()].filter((a) => (a.context.kind === 'announcement' || a.context.kind === 'party') && !wanted.has(a.UUID));
    for (const a of stale) this.cached.delete(a.UUID);
    if (stale.length) this.api.unregisterPlatformAccessories(PLUGIN_NAME, PLATFORM_NAME, stale);
    if (register.length) this.api.registerPlatformAccessories(PLUGIN_NAME, PLATFORM_NAME, register);
  }

  private refreshAll(): void {
    for (const sa of this.speakers.values()) sa.refresh();
    this.refreshSwitches();
  }

  private refreshSwitches(): void {
    for (const sw of this.switches) if (sw instanceof PartySwitch) sw.refresh();
  }
}
