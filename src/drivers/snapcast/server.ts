import type { Clock } from '../../core/clock';
import type { Logger } from '../../logger';
import type { MediaRequest, OverlayHandle, OverlayRequest, SpeakerSnapshot } from '../driver';
import { describeClient, hubVolume, snapcastDeviceId, snapVolume, SnapcastSpeaker, type ClientRouting } from './client-speaker';
import { hubFedStreams, type ResolvedServerConfig, type SnapcastConfig } from './config';
import { duckUnavailable, overlayDucked, playDucked, type DuckHost } from './duck-routing';
import { HubStream, type FeedSetup } from './hub-stream';
import { parseNotification, readServerAnswer, readVolumeAnswer, ServerModel, type ModelChange, type Notification, type RawServer } from './model';
import { ServerConnection } from './server-connection';
import { DEFAULT_TCP_SOURCE_PORT } from './sink';
import { streamSource } from './stream-source';
import { ZonePool } from './zone-pool';
import { ClientStreamPool } from './client-streams';

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
  /** The hub-fed streams zones play on, one zone each (issue 27). */
  readonly pool: ZonePool;
  /** Streams of their own for a zone's clients beyond one (snapcast.clientStreams, issue 30). */
  readonly clientStreams: ClientStreamPool;
  /** Announcements' own stream (snapcast.announceStream), used while snapserver declares it. */
  readonly overlayStream?: HubStream;
  private readonly speakers = new Map<string, SnapcastSpeaker>();
  /**
   * The stream each client was last stopped on (one entry per client, so bounded by them): an
   * announcement the hub plays on a client it silenced first goes where that client's music
   * is, as it would have while the client still played it.
   */
  private readonly leftStream = new Map<string, { stream: HubStream; at: number }>();
  private serverVersion = '';
  /** Why announcements fall back to the hub stream (no usable announcement stream), or undefined; as last logged. */
  private fallback?: string;
  private fallbackLogged = false;
  readonly log: Logger;
  /** What the ducked-announcement routing (duck-routing.ts) sees of this server. */
  private readonly duckHost: DuckHost;

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
    this.clientStreams = new ClientStreamPool(server, this.model, this.log);
    this.pool = new ZonePool(server, this.model, {
      clientStreams: this.clientStreams,
      control: this.connection,
      model: this.model,
      applied: (change) => this.apply(change),
      ffmpegPath: config.ffmpegPath ?? 'ffmpeg',
      startTimeoutMs: config.startTimeoutMs,
      connectTimeoutMs: config.requestTimeoutMs,
      clock,
      logger: this.log,
    });
    // The same stream twice would have two feeds and two groupings fight over it.
    if (server.announceStream !== server.stream) {
      this.overlayStream = new HubStream({
        // Its own stream swapped with the music's: neither is ever a place to release clients to.
        server: { ...server, stream: server.announceStream, announceStream: server.stream, source: undefined },
        control: this.connection,
        model: this.model,
        applied: (change) => this.apply(change),
        ffmpegPath: config.ffmpegPath ?? 'ffmpeg',
        startTimeoutMs: config.startTimeoutMs,
        connectTimeoutMs: config.requestTimeoutMs,
        clock,
        logger: this.log.child({ stream: server.announceStream }),
      });
    }
    if (this.overlayStream) this.pool.alsoPace(this.overlayStream);
    this.duckHost = {
      log: this.log,
      server,
      model: this.model,
      pool: this.pool,
      overlayStream: this.overlayStream,
      fallback: () => this.fallback,
      speakers: () => this.list(),
      playPlain: (list, media, setup) => this.playPlain(list, media, setup),
    };
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
    await Promise.all(this.streams().map((x) => x.shutdown()));
    this.connection.stop();
  }

  /**
   * Overlays (announcements) go to the announcement stream while snapserver declares one:
   * their clients leave the music's group first, and the music plays on for the others. A
   * client moves back by a play on the hub stream (the music rejoined). Without one they
   * play on the hub stream, which holds the music of the others until they are over.
   */
  async playGroup(list: SnapcastSpeaker[], media: MediaRequest): Promise<PromiseSettledResult<void>[]> {
    if (media.duck) return playDucked(this.duckHost, list, media);
    return this.playPlain(list, media);
  }

  /** A ducked announcement mixed into its targets' music in place; targets it cannot are answered OverlayUnavailable (duck-routing.ts). */
  overlay(list: SnapcastSpeaker[], request: OverlayRequest): Promise<PromiseSettledResult<OverlayHandle>[]> {
    return overlayDucked(this.duckHost, list, request);
  }

  /** Every hub-fed stream of this server: the zone pool's and the announcement stream. */
  private streams(): HubStream[] {
    return this.overlayStream ? [...this.pool.streams, this.overlayStream] : this.pool.streams;
  }

  /**
   * Music goes to its zone's stream (ZonePool.forPlay: one stream per zone); an announcement
   * to the announcement stream, or without one to the stream its clients' music is held on.
   * Clients on another stream leave it first (the zone they leave goes on for its others).
   */
  private async playPlain(list: SnapcastSpeaker[], media: MediaRequest, setup?: FeedSetup): Promise<PromiseSettledResult<void>[]> {
    const targets = new Set(list.map((s) => s.clientId));
    this.log.debug({ clients: [...targets], overlay: !!media.overlay }, 'start timing: play asked');
    let to: HubStream;
    try {
      to = media.overlay ? this.overlayFor(targets, media, setup) : this.pool.forPlay(media.zone, targets);
    } catch (e) {
      return list.map(() => ({ status: 'rejected', reason: e }));
    }
    return this.pool.run(to, [...targets], async () => {
      // Only awaits when a client switches streams: an announcement's next item is queued on
      // the stream at once, ahead of what its end scheduled there (HubStream.resumeHeld).
      for (const s of list)
        for (const from of this.streams())
          if (from !== to && from.has(s.clientId))
            await from
              .stop(s)
              .catch((e) => this.log.warn({ clientId: s.clientId, err: String(e) }, 'could not take the client off the other stream'));
      return to.playGroup(list, media, setup);
    });
  }

  /**
   * The stream an announcement plays on: the announcement stream while snapserver declares
   * it, unless another announcement (of clients this one does not take) has it: one stream
   * carries one media, so this one would cut that one short. It then takes a free zone stream
   * if there is one (two zones announcing at once), else the announcement stream as before.
   * Without an announcement stream: where its clients' music is held (ZonePool.forOverlay).
   */
  private overlayFor(targets: ReadonlySet<string>, media: MediaRequest, setup?: FeedSetup): HubStream {
    const overlay = this.fallback === undefined ? this.overlayStream : undefined;
    if (!overlay) {
      // Only just now (the hub silences a client right before its announcement): an old stop says nothing of where music is.
      const recent = this.opts.clock.now() - 10_000;
      const left = [...targets].flatMap((id) => {
        const l = this.leftStream.get(id);
        return l && l.at >= recent ? [l.stream] : [];
      });
      return this.pool.forOverlay(targets, left);
    }
    // A ducked mix is made in the announcement stream's sample format; more clients of the same announcement join it.
    if (setup || overlay.mediaUrl === media.url) return overlay;
    const others = [...this.pool.occupants(overlay)].filter((id) => !targets.has(id));
    if (!others.length) return overlay;
    const free = this.pool.freeStream();
    if (free)
      this.log.info({ stream: free.streamId, others }, 'another announcement has the announcement stream: this one plays on a free zone stream');
    return free ?? overlay;
  }

  /** The zone pool as snapserver declares it, logged at each (re)connect: how many zones can play here at once. */
  private logPool(): void {
    const declared = this.pool.declared().map((x) => x.streamId);
    const missing = this.pool.streams.map((x) => x.streamId).filter((id) => !declared.includes(id));
    this.log.info(
      { streams: declared, undeclared: missing, clientStreams: this.clientStreams.declared() },
      `${declared.length} hub stream(s) for zones: up to ${declared.length} playback(s) at once on this snapserver`,
    );
  }

  /**
   * Whether announcements can have a stream of their own here, and the log line saying so
   * (once at start, and again whenever a reconnect finds it changed).
   */
  private checkAnnounceStream(): void {
    const { server } = this.opts;
    const id = server.announceStream;
    let why: string | undefined;
    if (!this.overlayStream) why = `the announcement stream '${id}' is the music's own stream`;
    else if (!this.model.streams.has(id)) why = `snapserver declares no stream '${id}' for announcements`;
    else {
      try {
        streamSource({ ...server, stream: id, source: undefined }, this.model);
      } catch (e) {
        why = `the announcement stream cannot be fed: ${(e as Error).message}`;
      }
    }
    if (this.fallbackLogged && why === this.fallback) return;
    this.fallback = why;
    this.fallbackLogged = true;
    if (why === undefined) {
      this.log.info({ stream: id }, 'announcements play on their own stream; the music goes on for the other clients');
      return;
    }
    this.log.warn(
      { reason: why, declare: `source = tcp://0.0.0.0:${DEFAULT_TCP_SOURCE_PORT + 1}?name=${id}&mode=server` },
      `${why}: an announcement plays on the hub stream, and the music of this server's other clients is held (silent) until it is over, then goes on in sync. Declare the stream in snapserver.conf to keep them playing`,
    );
  }

  /** The stream a client plays (or is paused, held) on: the announcement stream, else its zone's; the first zone stream when none. */
  private streamOf(s: SnapcastSpeaker): HubStream {
    if (this.overlayStream?.has(s.clientId)) return this.overlayStream;
    return this.pool.streamOf(s.clientId) ?? this.pool.streams[0];
  }

  /**
   * A stop goes to the streams it concerns only, so that it never waits behind a start of
   * another zone; a client on none just reads stopped.
   */
  private async stopClient(s: SnapcastSpeaker): Promise<void> {
    const on = this.streams().filter((x) => x.involves(s.clientId) || this.pool.playingTowards(x, s.clientId));
    const music = on.find((x) => x !== this.overlayStream);
    if (music) this.leftStream.set(s.clientId, { stream: music, at: this.opts.clock.now() });
    if (!on.length) {
      if (s.state !== 'stopped') s.changeState('stopped', 'stopped');
      return;
    }
    await Promise.all(on.map((x) => x.stop(s)));
  }

  // ---- what speakers ask (ClientRouting) ----------------------------------------------

  /** Handed to each speaker; routes its commands to this server. */
  private readonly control: ClientRouting = {
    play: (s, m) => this.play(s, m),
    pause: (s) => this.streamOf(s).pause(s),
    resume: (s) => this.streamOf(s).resume(s),
    stop: (s) => this.stopClient(s),
    position: (s) => this.streamOf(s).position(s),
    setVolume: (s, v) => this.setVolume(s, v),
    snapshot: (s) => this.snapshot(s),
    isMuted: (s) => this.model.clients.get(s.clientId)?.config.volume.muted ?? false,
    setMute: async (s, muted) => {
      const percent = this.model.clients.get(s.clientId)?.config.volume.percent ?? s.volume * 2;
      const volume = readVolumeAnswer(await this.connection.request('Client.SetVolume', { id: s.clientId, volume: { percent, muted } }));
      this.apply(this.model.setVolume(s.clientId, volume));
    },
    restore: (s, snap, volumeOnly) => this.restore(s, snap, volumeOnly),
    duckUnavailable: (s, targets) => duckUnavailable(this.duckHost, s, targets),
    restoreLimit: () =>
      this.fallback === undefined
        ? undefined
        : `snapserver ${this.address} has no announcement stream (${this.fallback}): the music of its other clients is held, silent, while an announcement plays there, and goes on in sync afterwards`,
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
    const volume = readVolumeAnswer(
      await this.connection.request('Client.SetVolume', {
        id: s.clientId,
        volume: { percent: d.percent ?? snap.volume * 2, muted: !!snap.muted },
      }),
    );
    this.apply(this.model.setVolume(s.clientId, volume));
    const g = d.group;
    const own = hubFedStreams(this.opts.server);
    if (volumeOnly || !g || own.includes(g.streamId) || !this.model.streams.has(g.streamId)) return;
    const original = this.model.groups.get(g.groupId);
    if (original && !original.clientIds.includes(s.clientId)) {
      const r = readServerAnswer(
        await this.connection.request('Group.SetClients', {
          id: original.id,
          clients: [...original.clientIds, s.clientId],
        }),
      );
      this.apply(this.model.applyServer(r));
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
    const res = readVolumeAnswer(await this.connection.request('Client.SetVolume', { id: s.clientId, volume: snapVolume(volume) }));
    // snapserver does not notify the connection that made the change: take it from the answer.
    this.apply(this.model.setVolume(s.clientId, res));
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
    this.checkAnnounceStream();
    this.logPool();
    for (const x of this.streams()) x.scheduleReconcile();
  }

  private onDown(reason: string): void {
    this.log.warn({ reason }, 'lost the snapserver control connection; its clients are unavailable until it is back');
    for (const x of this.streams()) x.connectionLost();
    for (const s of this.speakers.values()) s.setConnected(false);
  }

  private onNotification(method: string, params: unknown): void {
    let n: Notification | undefined;
    try {
      n = parseNotification(method, params);
    } catch (e) {
      this.log.warn({ method, err: String(e) }, 'a snapserver notification had an unexpected shape; re-reading the status');
      this.refresh();
      return;
    }
    // One the hub does not follow (Group.OnMute, Stream.OnProperties, a newer server's).
    if (!n) return;
    if (n.method === 'Group.OnStreamChanged') {
      for (const x of this.streams()) x.groupTakenOver(n.params.id, n.params.stream_id);
    }
    const change = this.model.applyNotification(n);
    this.apply(change);
    if (change.unknown) this.refresh();
    if (TOPOLOGY.has(n.method)) for (const x of this.streams()) x.scheduleReconcile();
  }

  /** Re-reads the whole status (a notification named something the model did not know). */
  private refresh(): void {
    this.connection
      .request('Server.GetStatus')
      .then((r) => {
        this.apply(this.model.applyServer(readServerAnswer(r)));
        for (const x of this.streams()) x.scheduleReconcile();
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
      if (!available && s.available) for (const x of this.streams()) x.clientGone(id, 'snapclient disconnected');
      s.setConnected(available);
    }
    // A client missing from a full status may be deleted, or the server may have restarted
    // with fresh settings and not seen it yet: either way it stays listed, inactive, as the
    // hub keeps every speaker it has known (its DeviceID comes back when the client does).
    for (const id of change.removed) {
      const s = this.speakers.get(id);
      if (!s) continue;
      for (const x of this.streams()) x.clientGone(id, 'snapserver no longer lists the snapclient');
      s.setConnected(false);
    }
  }
}
