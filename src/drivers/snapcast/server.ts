import type { Clock } from '../../core/clock';
import type { Logger } from '../../logger';
import type { MediaRequest, SpeakerSnapshot } from '../driver';
import { describeClient, hubVolume, snapcastDeviceId, snapVolume, SnapcastSpeaker, type SpeakerControl } from './client-speaker';
import type { ResolvedServerConfig, SnapcastConfig } from './config';
import { HubStream } from './hub-stream';
import { ServerModel, type ModelChange, type RawServer, type RawVolume } from './model';
import { ServerConnection } from './server-connection';

export interface SnapServerOptions {
  server: ResolvedServerConfig;
  config: SnapcastConfig;
  clock: Clock;
  logger: Logger;
  added: (s: SnapcastSpeaker) => void;
}

/** Where a client sat: its group (and who else was in it) and the group's stream. */
interface SnapcastPlacement {
  groupId: string;
  clientIds: string[];
  streamId: string;
}

/** Notifications after which the grouping may break the hub-stream invariant. */
const TOPOLOGY = new Set(['Server.OnUpdate', 'Client.OnConnect', 'Client.OnDisconnect', 'Group.OnStreamChanged']);

/**
 * One snapserver: the control connection, the model of its clients, a speaker per client,
 * and the hub stream. It turns what the server reports into speaker events and routes
 * the speakers' commands.
 */
export class SnapServer {
  readonly address: string;
  private readonly connection: ServerConnection;
  private readonly model = new ServerModel();
  private readonly hubStream: HubStream;
  /** Announcements' own stream (snapcast.announceStream), when one is declared. */
  private readonly overlayStream?: HubStream;
  private readonly speakers = new Map<string, SnapcastSpeaker>();
  private serverVersion = '';
  private readonly log: Logger;

  constructor(private readonly opts: SnapServerOptions) {
    const { server, config, clock } = opts;
    this.address = server.address;
    this.log = opts.logger.child({ snapserver: server.address });
    this.connection = new ServerConnection({
      host: server.host,
      port: server.port,
      clock,
      logger: this.log,
      requestTimeoutMs: config.requestTimeoutMs,
      reconnectMinMs: config.reconnectMinMs,
      reconnectMaxMs: config.reconnectMaxMs,
    });
    this.hubStream = new HubStream({
      server,
      control: this.connection,
      model: this.model,
      applied: (change) => this.apply(change),
      ffmpegPath: config.ffmpegPath,
      startTimeoutMs: config.startTimeoutMs,
      connectTimeoutMs: config.requestTimeoutMs,
      clock,
      logger: this.log,
    });
    if (server.announceStream) {
      this.overlayStream = new HubStream({
        server: { ...server, stream: server.announceStream, source: undefined },
        control: this.connection,
        model: this.model,
        applied: (change) => this.apply(change),
        ffmpegPath: config.ffmpegPath,
        startTimeoutMs: config.startTimeoutMs,
        connectTimeoutMs: config.requestTimeoutMs,
        clock,
        logger: this.log.child({ stream: server.announceStream }),
      });
    }
    this.connection.on('up', (status) => this.onUp(status));
    this.connection.on('down', (reason) => this.onDown(reason));
    this.connection.on('notification', (method, params) => this.onNotification(method, params));
  }

  list(): SnapcastSpeaker[] {
    return [...this.speakers.values()];
  }

  owns(s: SnapcastSpeaker): boolean {
    return this.speakers.get(s.clientId) === s;
  }

  start(): Promise<void> {
    return this.connection.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.hubStream.shutdown(), this.overlayStream?.shutdown()]);
    this.connection.stop();
  }

  /**
   * Overlays (announcements) go to the announce stream when there is one: their clients
   * leave the music's group first, and the music plays on for the others. A client moves
   * back by a play on the hub stream (the music rejoined).
   */
  async playGroup(list: SnapcastSpeaker[], media: MediaRequest): Promise<PromiseSettledResult<void>[]> {
    const overlay = this.overlayStream;
    if (!overlay) return this.hubStream.playGroup(list, media);
    const [to, from] = media.overlay ? [overlay, this.hubStream] : [this.hubStream, overlay];
    for (const s of list)
      if (from.has(s.clientId))
        await from.stop(s).catch((e) => this.log.warn({ clientId: s.clientId, err: String(e) }, 'could not take the client off the other stream'));
    return to.playGroup(list, media);
  }

  private streamOf(s: SnapcastSpeaker): HubStream {
    return this.overlayStream?.has(s.clientId) ? this.overlayStream : this.hubStream;
  }

  // ---- what speakers ask (SpeakerControl) ----------------------------------------------

  /** Handed to each speaker; routes its commands to this server. */
  private readonly control: SpeakerControl = {
    play: (s, m) => this.play(s, m),
    pause: (s) => this.streamOf(s).pause(s),
    resume: (s) => this.streamOf(s).resume(s),
    stop: async (s) => {
      await Promise.all([this.hubStream.stop(s), this.overlayStream?.stop(s)]);
    },
    position: (s) => this.streamOf(s).position(s),
    setVolume: (s, v) => this.setVolume(s, v),
    snapshot: (s) => this.snapshot(s),
    isMuted: (s) => this.model.clients.get(s.clientId)?.config.volume.muted ?? false,
    setMute: async (s, muted) => {
      const percent = this.model.clients.get(s.clientId)?.config.volume.percent ?? s.volume * 2;
      const res = await this.connection.request<{ volume: RawVolume }>('Client.SetVolume', { id: s.clientId, volume: { percent, muted } });
      this.apply(this.model.setVolume(s.clientId, res.volume));
    },
    restore: (s, snap, volumeOnly) => this.restore(s, snap, volumeOnly),
  };

  private snapshot(s: SnapcastSpeaker): SpeakerSnapshot {
    const c = this.model.clients.get(s.clientId);
    const g = this.model.groupOf(s.clientId);
    const volume = c?.config.volume ?? { percent: s.volume * 2, muted: false };
    const group: SnapcastPlacement | undefined = g ? { groupId: g.id, clientIds: [...g.clientIds], streamId: g.streamId } : undefined;
    return {
      state: s.state,
      volume: hubVolume(volume),
      muted: volume.muted,
      takenAt: this.opts.clock.now(),
      driver: { percent: volume.percent, group },
    };
  }

  /**
   * Volume (percent and mute exactly), then, unless volumeOnly, the group and stream the
   * client had, when that was not one of the hub's own streams (the music rejoins by a play).
   */
  private async restore(s: SnapcastSpeaker, snap: SpeakerSnapshot, volumeOnly: boolean): Promise<void> {
    const d = (snap.driver ?? {}) as { percent?: number; group?: SnapcastPlacement };
    const res = await this.connection.request<{ volume: RawVolume }>('Client.SetVolume', {
      id: s.clientId,
      volume: { percent: d.percent ?? snap.volume * 2, muted: !!snap.muted },
    });
    this.apply(this.model.setVolume(s.clientId, res.volume));
    const g = d.group;
    const own = [this.opts.server.stream, this.opts.server.announceStream];
    if (volumeOnly || !g || own.includes(g.streamId) || !this.model.streams.has(g.streamId)) return;
    const original = this.model.groups.get(g.groupId);
    if (original && !original.clientIds.includes(s.clientId)) {
      const r = await this.connection.request<{ server: RawServer }>('Group.SetClients', {
        id: original.id,
        clients: [...original.clientIds, s.clientId],
      });
      this.apply(this.model.applyServer(r.server));
    }
    const now = this.model.groupOf(s.clientId);
    if (now && now.streamId !== g.streamId) {
      await this.connection.request('Group.SetStream', { id: now.id, stream_id: g.streamId });
      this.apply(this.model.setGroupStream(now.id, g.streamId));
    }
  }

  private async play(s: SnapcastSpeaker, media: MediaRequest): Promise<void> {
    const [result] = await this.playGroup([s], media);
    if (result.status === 'rejected') throw result.reason;
  }

  private async setVolume(s: SnapcastSpeaker, volume: number): Promise<void> {
    const res = await this.connection.request<{ volume: RawVolume }>('Client.SetVolume', { id: s.clientId, volume: snapVolume(volume) });
    // snapserver does not notify the connection that made the change: take it from the answer.
    this.apply(this.model.setVolume(s.clientId, res.volume));
  }

  // ---- server events -------------------------------------------------------------------

  private onUp(status: RawServer): void {
    this.serverVersion = status.server?.snapserver?.version ?? '';
    this.apply(this.model.applyServer(status), true);
    if (!this.model.streams.has(this.opts.server.stream)) {
      this.log.error(
        { stream: this.opts.server.stream, streams: [...this.model.streams.keys()] },
        'snapserver has no stream for the hub to feed; plays will fail until snapserver.conf declares it',
      );
    }
    this.hubStream.scheduleReconcile();
    this.overlayStream?.scheduleReconcile();
  }

  private onDown(reason: string): void {
    this.log.warn({ reason }, 'lost the snapserver control connection; its clients are unavailable until it is back');
    this.hubStream.connectionLost();
    this.overlayStream?.connectionLost();
    for (const s of this.speakers.values()) s.setAvailable(false);
  }

  private onNotification(method: string, params: any): void {
    if (method === 'Group.OnStreamChanged' && params?.id) {
      this.hubStream.groupTakenOver(params.id, params.stream_id);
      this.overlayStream?.groupTakenOver(params.id, params.stream_id);
    }
    let change: ModelChange;
    try {
      change = this.model.applyNotification(method, params);
    } catch (e) {
      this.log.warn({ method, err: String(e) }, 'could not apply a snapserver notification; re-reading the status');
      change = { clients: new Set(), placement: new Set(), removed: new Set(), unknown: true };
    }
    this.apply(change);
    if (change.unknown) this.refresh();
    if (TOPOLOGY.has(method)) {
      this.hubStream.scheduleReconcile();
      this.overlayStream?.scheduleReconcile();
    }
  }

  /** Re-reads the whole status (a notification named something the model did not know). */
  private refresh(): void {
    this.connection
      .request<{ server: RawServer }>('Server.GetStatus')
      .then((r) => {
        this.apply(this.model.applyServer(r.server));
        this.hubStream.scheduleReconcile();
        this.overlayStream?.scheduleReconcile();
      })
      .catch((e) => this.log.warn({ err: String(e) }, 'Server.GetStatus failed'));
  }

  /** Brings the speakers in line with the model after `change`. */
  private apply(change: ModelChange, all = false): void {
    const ids = all ? [...this.model.clients.keys()] : [...new Set([...change.clients, ...change.placement])];
    for (const id of ids) {
      const c = this.model.clients.get(id);
      if (!c) continue;
      const info = describeClient(this.address, c, this.model.groupOf(id), this.serverVersion);
      const volume = hubVolume(c.config.volume);
      const available = this.connection.connected && c.connected;
      let s = this.speakers.get(id);
      if (!s) {
        s = new SnapcastSpeaker(snapcastDeviceId(this.address, id), id, this.control, info, volume, available);
        this.speakers.set(id, s);
        this.log.info({ clientId: id, deviceId: s.id, name: info.name }, 'snapclient found');
        this.opts.added(s);
        continue;
      }
      s.update(info, volume);
      if (!available && s.available) {
        this.hubStream.clientGone(id, 'snapclient disconnected');
        this.overlayStream?.clientGone(id, 'snapclient disconnected');
      }
      s.setAvailable(available);
    }
    // A client missing from a full status may be deleted, or the server may have restarted
    // with fresh settings and not seen it yet: either way it stays listed, inactive, as the
    // hub keeps every speaker it has known (its DeviceID comes back when the client does).
    for (const id of change.removed) {
      const s = this.speakers.get(id);
      if (!s) continue;
      this.hubStream.clientGone(id, 'snapserver no longer lists the snapclient');
      this.overlayStream?.clientGone(id, 'snapserver no longer lists the snapclient');
      s.setAvailable(false);
    }
  }
}
