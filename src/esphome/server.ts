import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type { Server as HttpServer } from 'node:http';
import type { Logger } from '../logger';
import { LimitedLog } from '../logging/limited-log';
import { AllowList } from '../net/allow-list';
import { installConnectionLimits } from '../net/connection-limits';
import { ApiConnection, type ConnectionHost } from './connection';
import { CommandRunner, type PlayerCommandRequest } from './commands';
import type { EsphomeConfig } from './config';
import { areaFor, buildModel, FEATURE_FLAGS, stateOf, SUPPORTED_FORMATS, type DeviceModel, type EntityState } from './entities';
import { PlaintextTransport } from './frame-codec';
import type { EsphomeHubPort, HubChange } from './hub-port';
import { NoiseTransport } from './noise-transport';

/** The API version the server speaks: 1.12 (ESPHome 2025.8+: no password step, sub-devices). */
const API_VERSION = { major: 1, minor: 12 };
/** The ESPHome release whose protocol this matches (Home Assistant reads features from it). */
const ESPHOME_VERSION = '2025.10.0';
/** Largest message a client may send: ESPHome's clients send small requests; 64 KiB bounds a frame's buffer. */
const MAX_MESSAGE_BYTES = 64 * 1024;
/** Commands of one client running at once (Home Assistant sends one at a time). */
const MAX_INFLIGHT = 16;
/** Waits this long after the speakers change before telling clients to list again (a scan adds many at once). */
const RELIST_DEBOUNCE_MS = 2000;

export interface ServerIdentity {
  name: string;
  mac: string;
  friendlyName: string;
  version: string;
}

/**
 * The native API server: accepts clients (those on esphome.allow, at most maxConnections in
 * all and maxConnectionsPerAddress from one address; the rest reset at once),
 * answers their requests from the device model, and sends each subscribed client every
 * media_player state that changes. One model for all clients, rebuilt when the speakers
 * change; a state is sent only when it differs from the last one sent.
 */
export class EsphomeServer implements ConnectionHost {
  private readonly server: Server;
  private readonly conns = new Set<ApiConnection>();
  private model: DeviceModel;
  private readonly states = new Map<number, EntityState>();
  private readonly runner: CommandRunner;
  private relistTimer?: NodeJS.Timeout;
  private limits?: { open(): number };
  private readonly flooded: LimitedLog;
  /** esphome.allow: who may connect at all. */
  readonly allow: AllowList;

  constructor(
    private readonly cfg: EsphomeConfig,
    private readonly psk: Buffer | undefined,
    private readonly id: ServerIdentity,
    private readonly hub: EsphomeHubPort,
    private readonly log: Logger,
  ) {
    this.model = buildModel([]);
    this.allow = new AllowList(cfg.allow);
    this.runner = new CommandRunner(hub, { mode: cfg.announcementMode, allowLocalUrls: cfg.allowLocalUrls }, log);
    this.flooded = new LimitedLog(log, 'ESPHome: a client sent commands faster than they run; dropped');
    this.server = createServer((socket) => this.accept(socket));
  }

  async listen(): Promise<number> {
    // The REST server's connection caps and allow-list, on this plain TCP server (it uses only
    // 'connection' events): a host not on esphome.allow, or over its cap, is reset before a byte is read.
    this.limits = installConnectionLimits(
      this.server as unknown as HttpServer,
      {
        maxConnections: this.cfg.maxConnections,
        maxConnectionsPerAddress: this.cfg.maxConnectionsPerAddress,
        admits: this.allow.any ? undefined : (address) => this.allow.allows(address),
      },
      this.log,
      'esphome',
    );
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.cfg.port, this.cfg.host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    return (this.server.address() as AddressInfo).port;
  }

  /** Open client connections. */
  get connections(): number {
    return this.limits?.open() ?? 0;
  }

  entities(): DeviceModel['entities'] {
    return this.model.entities;
  }

  async close(): Promise<void> {
    clearTimeout(this.relistTimer);
    for (const c of this.conns) c.requestDisconnect();
    const closed = new Promise<void>((r) => this.server.close(() => r()));
    // Clients get their DisconnectRequest; whoever has not gone after a moment is cut.
    const t = setTimeout(() => {
      for (const c of this.conns) c.destroy();
    }, 300);
    await closed;
    clearTimeout(t);
  }

  hubChanged(c: HubChange): void {
    if (c.kind === 'speakers') {
      const speakers = this.hub.speakers();
      if (speakers.length > this.cfg.maxSpeakers)
        this.log.warn(
          { speakers: speakers.length, published: this.cfg.maxSpeakers },
          'ESPHome: more speakers than esphome.maxSpeakers; the rest are not published',
        );
      const next = buildModel(speakers.slice(0, this.cfg.maxSpeakers), (sp) => areaFor(this.cfg.areas, sp));
      const changed = next.signature !== this.model.signature;
      this.model = next;
      for (const key of [...this.states.keys()]) if (!next.byKey.has(key)) this.states.delete(key);
      this.refresh(next.entities.map((e) => e.key));
      if (changed) this.scheduleRelist();
      return;
    }
    const keys = this.model.entities.filter((e) => e.target === 'party' || c.ids.includes(e.target)).map((e) => e.key);
    this.refresh(keys);
  }

  /** Recomputes these entities' states and sends those that changed. */
  private refresh(keys: number[]): void {
    for (const key of keys) {
      const e = this.model.byKey.get(key);
      if (!e) continue;
      const s = stateOf(this.hub, e.target);
      const before = this.states.get(key);
      if (before && before.state === s.state && before.volume === s.volume && before.muted === s.muted) continue;
      this.states.set(key, s);
      for (const c of this.conns) if (c.subscribed) this.sendState(c, key, e.deviceId, s);
    }
  }

  private sendState(c: ApiConnection, key: number, deviceId: number, s: EntityState): void {
    c.send('MediaPlayerStateResponse', { key, state: s.state, volume: s.volume, muted: s.muted, device_id: deviceId });
  }

  /** Clients that listed the old entities disconnect and reconnect (Home Assistant then lists again), as after a device's update. */
  private scheduleRelist(): void {
    clearTimeout(this.relistTimer);
    this.relistTimer = setTimeout(() => {
      for (const c of this.conns) if (c.listed !== undefined && c.listed !== this.model.signature) c.requestDisconnect();
    }, RELIST_DEBOUNCE_MS);
    this.relistTimer.unref();
  }

  private accept(socket: Socket): void {
    const ref: { conn?: ApiConnection } = {};
    const transport = this.psk
      ? new NoiseTransport(
          this.psk,
          // ESPHome's server hello carries the MAC as aioesphomeapi's expected_mac: lower case, no separators.
          { name: this.id.name, mac: this.id.mac.replace(/:/g, '').toLowerCase() },
          (b) => ref.conn?.writeRaw(b),
        )
      : new PlaintextTransport(MAX_MESSAGE_BYTES);
    const conn = new ApiConnection(socket, transport, this, this.log, this.cfg.maxWriteBufferBytes, (c) => this.conns.delete(c));
    ref.conn = conn;
    this.conns.add(conn);
  }

  hello(): Record<string, unknown> {
    return {
      api_version_major: API_VERSION.major,
      api_version_minor: API_VERSION.minor,
      server_info: `SpeakerHub ${this.id.version}`.slice(0, 32),
      name: this.id.name,
    };
  }

  deviceInfo(): Record<string, unknown> {
    return {
      uses_password: false,
      name: this.id.name,
      mac_address: this.id.mac,
      esphome_version: ESPHOME_VERSION,
      compilation_time: '',
      model: 'SpeakerHub',
      manufacturer: 'SpeakerHub',
      friendly_name: this.id.friendlyName,
      project_name: 'speakerhub.hub',
      project_version: this.id.version,
      api_encryption_supported: this.psk !== undefined,
      devices: this.model.devices,
      areas: this.model.areas,
    };
  }

  listEntities(c: ApiConnection): void {
    c.listed = this.model.signature;
    for (const e of this.model.entities) {
      c.send('ListEntitiesMediaPlayerResponse', {
        object_id: e.objectId,
        key: e.key,
        name: e.name,
        icon: e.target === 'party' ? 'mdi:speaker-multiple' : 'mdi:speaker',
        supports_pause: true,
        supported_formats: SUPPORTED_FORMATS,
        device_id: e.deviceId,
        feature_flags: FEATURE_FLAGS,
      });
    }
    c.send('ListEntitiesDoneResponse');
  }

  subscribed(c: ApiConnection): void {
    for (const e of this.model.entities) {
      let s = this.states.get(e.key);
      if (!s) this.states.set(e.key, (s = stateOf(this.hub, e.target)));
      this.sendState(c, e.key, e.deviceId, s);
    }
  }

  command(c: ApiConnection, body: Record<string, unknown>): void {
    const req = body as unknown as PlayerCommandRequest;
    const entity = this.model.byKey.get(req.key);
    if (!entity) return;
    // A client's commands run at most MAX_INFLIGHT at a time; a flood beyond is dropped (and
    // logged, rate-limited), never queued: the state the client then gets tells what happened.
    if (c.inflight >= MAX_INFLIGHT) {
      this.flooded.warn({ client: c.clientInfo || undefined, inflight: c.inflight });
      return;
    }
    c.inflight++;
    void this.runner.run(entity, req, c.remoteAddress).finally(() => c.inflight--);
  }
}
