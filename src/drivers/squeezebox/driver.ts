import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { EventEmitter } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import type { Logger } from '../../logger';
import { AllowList } from '../../net/allow-list';
import { digitId, type DriverEvents, type MediaRequest, type SpeakerDriver } from '../driver';
import { PlayerAdmission } from './admission';
import { AudioServer, type AudioOffer } from './audio-server';
import type { PlayerVolumes } from '../../persistence/player-volumes';
import type { SqueezeboxConfig } from './config';
import { hubMs, PlayerConnection } from './connection';
import { discoveryReply, type Helo } from './protocol';
import { SqueezeboxSpeaker, type SpeakerHost } from './speaker';
import { SyncGroup } from './sync-group';

/** Players are asked for a report this often (squeezelite drops a server silent for 35 s). */
const KEEPALIVE_MS = 2000;
/** One log line per kind of refusal per this long (with how many were refused meanwhile). */
const REFUSAL_LOG_MS = 10_000;
/** Most discovery answers per second (a broadcast storm must not make the hub one). */
const MAX_DISCOVERY_REPLIES_PER_S = 20;
/** Least notice a player gets of its start moment (strm u on the way, the player's clock mapped). */
const MIN_START_NOTICE_MS = 50;

/**
 * The hub as a SlimProto server: every player that connects and says HELO is a speaker (known
 * by its MAC, so it keeps its DeviceID across reconnects); the audio it plays is served by the
 * driver's own HTTP server, decoded by ffmpeg. Plays of several players start in sync: each
 * buffers with autostart off, then all are unpaused at one moment mapped onto each player's
 * own clock, and kept there with their elapsed-time reports.
 */
export class SqueezeboxDriver extends EventEmitter<DriverEvents> implements SpeakerDriver, SpeakerHost {
  readonly name = 'squeezebox';
  private server?: Server;
  private udp?: UdpSocket;
  private readonly audio: AudioServer;
  private readonly byMac = new Map<string, SqueezeboxSpeaker>();
  private readonly connections = new Set<PlayerConnection>();
  private keepaliveTimer?: NodeJS.Timeout;
  private readonly refusals = new Map<string, { at: number; suppressed: number }>();
  private discoveryWindow = { at: 0, count: 0 };
  private readonly log: Logger;
  private readonly allow: AllowList;
  /** Who becomes (and stays) a player: per-address caps, STAT deadline, MAC claims (admission.ts). */
  private readonly admission: PlayerAdmission;

  constructor(private readonly opts: { config: SqueezeboxConfig; logger: Logger; volumes?: PlayerVolumes; ffmpegPath?: string }) {
    super();
    this.log = opts.logger;
    this.allow = new AllowList(opts.config.allow);
    const table = { byMac: this.byMac, forget: (mac: string) => this.forget(mac), refuse: this.refuse.bind(this) };
    this.admission = new PlayerAdmission(opts.config, this.allow, table, opts.logger);
    this.audio = new AudioServer({
      host: opts.config.host,
      port: opts.config.audioPort,
      logger: opts.logger,
      maxStreams: 64,
      ffmpegPath: opts.ffmpegPath,
    });
  }

  get audioPort(): number {
    return this.audio.port;
  }
  get startTimeoutMs(): number {
    return this.opts.config.startTimeoutMs;
  }
  get syncLeadMs(): number {
    return this.opts.config.syncLeadMs;
  }
  get syncToleranceMs(): number {
    return this.opts.config.syncToleranceMs;
  }
  /** The SlimProto port actually bound (the configured one, or the OS's pick for 0 in tests). */
  port = 0;

  async start(): Promise<void> {
    const cfg = this.opts.config;
    await this.opts.volumes?.load();
    await this.audio.start();
    // Paused until admitted: a refused connection (a flood) costs no read before it is reset.
    const server = createServer({ pauseOnConnect: true }, (socket) => this.accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(cfg.port, cfg.host, () => resolve());
    });
    server.on('error', (e) => this.log.warn({ err: e.message }, 'squeezebox: SlimProto server error'));
    this.server = server;
    const addr = server.address();
    this.port = typeof addr === 'object' && addr ? addr.port : cfg.port;
    this.log.info({ port: this.port, audioPort: this.audio.port }, `squeezebox: SlimProto server on port ${this.port}`);
    // SlimProto has no way to carry the API token: say so where the operator looks (issue 32 item 6).
    this.log.warn(
      { allow: this.allow.describe() },
      `squeezebox: SlimProto takes no API token: ${this.allow.any ? 'any host on the LAN' : `hosts in ${this.allow.describe()}`} may connect as a player (limit with squeezebox.allow)`,
    );
    if (cfg.discovery) await this.startDiscovery();
    this.keepaliveTimer = setInterval(() => {
      for (const s of this.byMac.values()) s.keepalive();
      this.admission.closeSilent();
    }, KEEPALIVE_MS);
    this.keepaliveTimer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.keepaliveTimer);
    const server = this.server;
    this.server = undefined;
    for (const s of this.byMac.values()) await s.stop().catch(() => undefined);
    for (const c of this.connections) c.close();
    this.udp?.close();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    await this.audio.stop();
    await this.opts.volumes?.close();
  }

  speakers(): SqueezeboxSpeaker[] {
    return [...this.byMac.values()];
  }

  // ---- connections ---------------------------------------------------------------------------

  /** One log line per kind of refusal per REFUSAL_LOG_MS: a flood is a count, not a flood of lines. */
  private refuse(kind: string, message: string, fields: Record<string, unknown> = {}): void {
    const now = Date.now();
    const r = this.refusals.get(kind);
    if (r && now - r.at < REFUSAL_LOG_MS) {
      r.suppressed++;
      return;
    }
    this.refusals.set(kind, { at: now, suppressed: 0 });
    this.log.warn({ ...fields, refusedSinceLastLine: r?.suppressed ?? 0 }, `squeezebox: ${message}`);
  }

  private accept(socket: Socket): void {
    const peer = (socket.remoteAddress ?? '').replace(/^::ffff:/, '');
    const refused = this.admission.connect(peer, this.connections.size);
    if (refused) {
      this.refuse(refused.kind, refused.message, { peer });
      socket.on('error', () => undefined);
      // Reset rather than FIN: nothing is owed to a refused client, and no TIME_WAIT is kept.
      socket.resetAndDestroy();
      return;
    }
    const conn = new PlayerConnection(socket, this.opts.config.heloTimeoutMs);
    socket.resume();
    this.connections.add(conn);
    let speaker: SqueezeboxSpeaker | undefined;
    conn.on('fault', (err) => this.refuse(err.code, `connection from ${peer} closed: ${err.message}`, { peer, code: err.code }));
    conn.on('helo', (helo) => {
      this.admission
        .admit(conn, helo)
        .then((ok) => {
          if (ok && !conn.isClosed && this.server) speaker = this.playerConnected(conn, helo);
        })
        .catch((e: Error) => {
          this.log.warn({ err: e.message, peer }, 'squeezebox: player admission failed');
          conn.close();
        });
    });
    conn.on('stat', (stat, at) => speaker?.onStat(stat, at));
    conn.on('name', (name) => speaker?.rename(name));
    conn.on('close', () => {
      this.connections.delete(conn);
      this.admission.disconnected(peer);
      if (speaker) {
        if (speaker.conn === conn) this.log.info({ speaker: speaker.id, mac: conn.helo?.mac }, `squeezebox: ${speaker.info().name} disconnected`);
        speaker.detach(conn);
        if (!speaker.conn && conn.helo) this.admission.offline(conn.helo.mac);
      }
    });
  }

  /** Drops an offline player from the speaker list (the table is full; admission.ts chose it). */
  private forget(mac: string): void {
    const s = this.byMac.get(mac);
    if (!s || s.conn) return;
    this.byMac.delete(mac);
    this.admission.forgotten(mac);
    this.emit('speakerRemoved', s);
    void s.stop().catch(() => undefined);
  }

  private playerConnected(conn: PlayerConnection, helo: Helo): SqueezeboxSpeaker {
    let speaker = this.byMac.get(helo.mac);
    const isNew = !speaker;
    if (!speaker) {
      const id = digitId(`squeezebox:${helo.mac}`);
      speaker = new SqueezeboxSpeaker(
        id,
        {
          name: `Squeezebox ${helo.mac.slice(-5)}`,
          groupName: 'Squeezebox',
          groupId: digitId('squeezebox-group', 10),
          modelName: helo.modelName,
          version: helo.firmware,
          role: 21,
          macAddress: helo.mac.toUpperCase(),
          ipAddress: conn.remoteAddress,
          port: conn.socket.remotePort ?? 0,
          wifiSignalStrength: 0,
        },
        this,
        this.log.child({ speaker: id }),
        this.opts.volumes,
      );
      this.byMac.set(helo.mac, speaker);
    }
    // A player that reconnects while its old connection lingers: the new one is it now.
    const old = speaker.conn;
    if (old && old !== conn) {
      speaker.detach(old);
      old.close();
    }
    speaker.attach(conn, helo);
    this.log.info({ speaker: speaker.id, mac: helo.mac, model: helo.modelName, firmware: helo.firmware }, `squeezebox: player ${helo.mac} connected`);
    if (isNew) this.emit('speakerAdded', speaker);
    return speaker;
  }

  private async startDiscovery(): Promise<void> {
    const cfg = this.opts.config;
    const udp = createSocket({ type: 'udp4', reuseAddr: true });
    udp.on('message', (msg, rinfo) => {
      // A player's discovery is 'e' followed by optional TLV requests (squeezelite sends 'e' alone).
      if (msg.length < 1 || msg.length > 1500 || msg[0] !== 0x65) return;
      const now = Date.now();
      if (now - this.discoveryWindow.at >= 1000) this.discoveryWindow = { at: now, count: 0 };
      if (++this.discoveryWindow.count > MAX_DISCOVERY_REPLIES_PER_S) return;
      udp.send(discoveryReply('SpeakerHub'), rinfo.port, rinfo.address);
    });
    try {
      await new Promise<void>((resolve, reject) => {
        udp.once('error', reject);
        udp.bind(this.port, cfg.host, () => resolve());
      });
      udp.on('error', () => undefined);
      this.udp = udp;
    } catch (e) {
      udp.close();
      this.log.warn(
        { err: (e as Error).message },
        `squeezebox: UDP discovery on port ${this.port} unavailable (another server answers there?); players need -s <hub>`,
      );
    }
  }

  // ---- plays ---------------------------------------------------------------------------------

  offer(offer: AudioOffer): string {
    return this.audio.offer(offer);
  }
  revoke(path: string): void {
    this.audio.revoke(path);
  }

  playGroup(speakers: SqueezeboxSpeaker[], media: MediaRequest): Promise<PromiseSettledResult<void>[]> {
    return this.playOn(speakers, media);
  }

  /**
   * How far ahead a start instant agreed with other families must be: the time a player needs
   * to fetch and buffer its stream (joinLeadMs, the same need as a player joining a play).
   */
  startLeadMs(): number {
    return this.opts.config.joinLeadMs;
  }

  /**
   * The moment a new group starts: the agreed instant of a cross-family play (MediaRequest.startInstant)
   * when the players can still make it, else syncLeadMs after the last one reported its buffer ready.
   */
  private startMoment(media: MediaRequest): number {
    const now = hubMs();
    const own = now + this.opts.config.syncLeadMs;
    if (media.startInstant === undefined) return own;
    // strm u needs a few ms to reach the players; later than that and the instant is missed.
    if (media.startInstant >= now + MIN_START_NOTICE_MS) {
      this.log.debug({ slackMs: Math.round(media.startInstant - now) }, 'squeezebox: players start at the instant agreed with the other speakers');
      return media.startInstant;
    }
    this.log.warn(
      { missedByMs: Math.round(now + MIN_START_NOTICE_MS - media.startInstant) },
      'squeezebox: players were not ready by the start instant agreed with the other speakers; starting them late (raise squeezebox.joinLeadMs)',
    );
    return now + MIN_START_NOTICE_MS;
  }

  /**
   * Starts `media` on the speakers together: each loads its stream with autostart off and
   * reports its buffer ready (STMl); then every player gets the same moment, syncLeadMs after
   * the last one was ready, each on its own clock. A play that continues a running group (a
   * player joining its zone, an announced speaker given back to it) joins that group in sync.
   */
  async playOn(speakers: SqueezeboxSpeaker[], media: MediaRequest): Promise<PromiseSettledResult<void>[]> {
    const running = this.runningGroup(media);
    if (running) return Promise.allSettled(speakers.map((s) => this.join(s, running)));
    const group = new SyncGroup(media, media.startAt ?? 0);
    const loaded = await Promise.allSettled(speakers.map((s) => s.load(group, group.startAt)));
    const ready = speakers.filter((_, i) => loaded[i].status === 'fulfilled' && speakers[i].current?.group === group);
    if (!ready.length) {
      group.end();
      return loaded;
    }
    const at = this.startMoment(media);
    group.begin(at);
    const started = await Promise.allSettled(ready.map((s) => s.startAt(at)));
    return speakers.map((s, i) => {
      const k = ready.indexOf(s);
      return k < 0 ? loaded[i] : started[k];
    });
  }

  /**
   * The running group a play continues. A start for a zone (MediaRequest.zone) joins that
   * zone's group and no other: two zones playing the same URL from the same position are two
   * groups, so a stop or a new play in one never touches the other's players. The engine names
   * a fresh zone for every play, so a zone's first start finds no group and makes its own.
   * Without a zone (an overlay, or a driver user that names none) the group is recognised as
   * before: same URL, playing, about at the start offset.
   */
  private runningGroup(media: MediaRequest): SyncGroup | undefined {
    if (media.zone !== undefined) {
      for (const s of this.byMac.values()) {
        const g = s.current?.group;
        if (g && g.state === 'playing' && g.zone === media.zone) return g;
      }
      return undefined;
    }
    if (media.startAt === undefined) return undefined;
    for (const s of this.byMac.values()) {
      const g = s.current?.group;
      if (g && g.state === 'playing' && g.zone === undefined && g.url === media.url && Math.abs(g.position() - media.startAt) < 5) return g;
    }
    return undefined;
  }

  /** Joins a running group in sync: the stream starts where the group will be joinLeadMs from now, and plays at that moment. */
  async join(speaker: SqueezeboxSpeaker, group: SyncGroup): Promise<void> {
    if (speaker.current?.group === group) return;
    let at = hubMs() + this.opts.config.joinLeadMs;
    const offset = group.position(at);
    await speaker.load(group, offset);
    if (group.state !== 'playing') throw new Error('the play ended before the player joined');
    // Late (a slow buffer): start now at the planned offset; sync keeping skips it to the group.
    const planned = group.startTimeFor(offset);
    at = Math.max(planned, hubMs() + 50);
    await speaker.startAt(at);
  }
}
