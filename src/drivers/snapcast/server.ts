import type { Clock } from '../../core/clock';
import type { Logger } from '../../logger';
import { voiceGainDb } from '../../media/duck-mix';
import type { MediaRequest, SpeakerSnapshot } from '../driver';
import { describeClient, hubVolume, snapcastDeviceId, snapVolume, SnapcastSpeaker, type SpeakerControl } from './client-speaker';
import type { ResolvedServerConfig, SnapcastConfig } from './config';
import { duckOverlaySetup } from './duck-overlay';
import { parseSampleFormat } from './feeder';
import { HubStream, type FeedSetup } from './hub-stream';
import { parseNotification, readServerAnswer, readVolumeAnswer, ServerModel, type ModelChange, type Notification, type RawServer } from './model';
import { ServerConnection } from './server-connection';
import { DEFAULT_TCP_SOURCE_PORT } from './sink';
import { streamSource } from './stream-source';

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
  /** Announcements' own stream (snapcast.announceStream), used while snapserver declares it. */
  private readonly overlayStream?: HubStream;
  private readonly speakers = new Map<string, SnapcastSpeaker>();
  private serverVersion = '';
  /** Why announcements fall back to the hub stream (no usable announcement stream), or undefined; as last logged. */
  private fallback?: string;
  private fallbackLogged = false;
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
    // The same stream twice would have two feeds and two groupings fight over it.
    if (server.announceStream !== server.stream) {
      this.overlayStream = new HubStream({
        // Its own stream swapped with the music's: neither is ever a place to release clients to.
        server: { ...server, stream: server.announceStream, announceStream: server.stream, source: undefined },
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
   * Overlays (announcements) go to the announcement stream while snapserver declares one:
   * their clients leave the music's group first, and the music plays on for the others. A
   * client moves back by a play on the hub stream (the music rejoined). Without one they
   * play on the hub stream, which holds the music of the others until they are over.
   */
  async playGroup(list: SnapcastSpeaker[], media: MediaRequest): Promise<PromiseSettledResult<void>[]> {
    if (media.duck) return this.playDucked(list, media);
    return this.playPlain(list, media);
  }

  /**
   * A ducked announcement (issue 21). When the targets are every client that hears the hub's
   * music, it is mixed into the music's own feed (HubStream.duck): nobody changes stream, so
   * the music does not miss a sample. When others hear the same music, the targets move to the
   * announcement stream, fed with the announcement mixed over a copy of the music (see
   * duck-overlay.ts), and the others keep the music unchanged; a snapclient changing streams
   * starts its buffer afresh, so the targets miss about a buffer's length of music at each
   * move. Targets with no music play it as an overlay, as interrupt does. Without an
   * announcement stream of the music's format it is an interrupt (the core asked
   * duckUnavailable first, so only when that changed in between), and the log says why.
   */
  private async playDucked(list: SnapcastSpeaker[], media: MediaRequest): Promise<PromiseSettledResult<void>[]> {
    const plain: MediaRequest = { ...media, duck: undefined };
    const listeners = new Set(this.hubStream.listeners());
    const mixed = list.filter((s) => listeners.has(s.clientId));
    const targets = new Set(list.map((s) => s.clientId));
    const others = [...listeners].filter((id) => !targets.has(id));
    if (!mixed.length) return this.playPlain(list, plain);
    // One mix for every target: the voice's level against their average volume.
    const volume = mixed.reduce((sum, s) => sum + s.volume, 0) / mixed.length;
    const gain = voiceGainDb(media.duck!.voiceVolume, volume);
    if (others.length) {
      const why = this.overlayDuckUnavailable();
      if (why) {
        this.log.warn(
          { clients: mixed.map((s) => s.clientId), others, reason: why },
          'the music is shared with clients not announced: the announcement interrupts it',
        );
        return this.playPlain(list, plain);
      }
      const format = this.hubStream.feedFormat!;
      const setup = duckOverlaySetup({
        tapMusic: (fn, replayMs) => this.hubStream.tapMusic(fn, replayMs),
        format,
        duck: media.duck!,
        voiceGainDb: gain,
        ...(this.hubStream.musicLufs !== undefined ? { musicLufs: this.hubStream.musicLufs } : {}),
        ...(media.duration !== undefined ? { voiceSeconds: media.duration } : {}),
      });
      this.log.info(
        { clients: mixed.map((s) => s.clientId), others },
        'announcement mixed over a copy of the music on the announcement stream (ducked)',
      );
      // Targets without music hear the same mix: the music of the room next door, lowered, is no harm.
      return this.playPlain(list, { ...media, overlay: true }, setup);
    }
    const rest = list.filter((s) => !listeners.has(s.clientId));
    const [ducked, played] = await Promise.all([
      this.hubStream.duck(mixed, media, gain),
      rest.length ? this.playPlain(rest, plain) : Promise.resolve([]),
    ]);
    return list.map((s) => (mixed.includes(s) ? ducked[mixed.indexOf(s)] : played[rest.indexOf(s)]));
  }

  /**
   * Why an announcement cannot be mixed into what `s` plays now, announced together with
   * `targets` (DeviceIDs); undefined when it can (or when it plays nothing: the announcement
   * alone is all there is to hear).
   */
  duckUnavailable(s: SnapcastSpeaker, targets: readonly string[]): string | undefined {
    const listeners = this.hubStream.listeners();
    if (listeners.includes(s.clientId)) {
      const wanted = new Set(targets);
      const others = [...this.speakers.values()].filter((x) => listeners.includes(x.clientId) && !wanted.has(x.id));
      if (!others.length) return undefined;
      const why = this.overlayDuckUnavailable();
      if (!why) return undefined;
      return `its music is the same stream as that of ${others.map((x) => x.info().name).join(', ')}, which the announcement does not target, and ${why}`;
    }
    const g = this.model.groupOf(s.clientId);
    const own = [this.opts.server.stream, this.opts.server.announceStream];
    if (g && !own.includes(g.streamId) && this.model.streams.get(g.streamId)?.status === 'playing') {
      return `it plays snapserver stream '${g.streamId}', which the hub does not feed, so it cannot mix into it`;
    }
    return undefined;
  }

  /** Why a ducked announcement cannot have a mix of its own on the announcement stream, or undefined. */
  private overlayDuckUnavailable(): string | undefined {
    if (!this.overlayStream || this.fallback !== undefined)
      return `snapserver has no announcement stream to give the announced clients a mix of their own (${this.fallback ?? 'none'})`;
    const music = this.hubStream.feedFormat;
    if (!music) return 'the music is not fed right now';
    let format: string;
    try {
      format = streamSource({ ...this.opts.server, stream: this.opts.server.announceStream, source: undefined }, this.model).format;
    } catch (e) {
      return `the announcement stream cannot be fed: ${(e as Error).message}`;
    }
    const f = parseSampleFormat(format);
    if (f.rate !== music.rate || f.bits !== music.bits || f.channels !== music.channels)
      return `the announcement stream's sample format (${format}) is not the music's (${music.rate}:${music.bits}:${music.channels}), so the music cannot be mixed into it`;
    return undefined;
  }

  private async playPlain(list: SnapcastSpeaker[], media: MediaRequest, setup?: FeedSetup): Promise<PromiseSettledResult<void>[]> {
    const overlay = this.fallback === undefined ? this.overlayStream : undefined;
    const to = media.overlay && overlay ? overlay : this.hubStream;
    const from = to === this.hubStream ? this.overlayStream : this.hubStream;
    // Only awaits when a client switches streams: an announcement's next item is queued on
    // the stream at once, ahead of what its end scheduled there (HubStream.resumeHeld).
    for (const s of list)
      if (from?.has(s.clientId))
        await from.stop(s).catch((e) => this.log.warn({ clientId: s.clientId, err: String(e) }, 'could not take the client off the other stream'));
    return to.playGroup(list, media, setup);
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
      const volume = readVolumeAnswer(await this.connection.request('Client.SetVolume', { id: s.clientId, volume: { percent, muted } }));
      this.apply(this.model.setVolume(s.clientId, volume));
    },
    restore: (s, snap, volumeOnly) => this.restore(s, snap, volumeOnly),
    duckUnavailable: (s, targets) => this.duckUnavailable(s, targets),
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
    const own = [this.opts.server.stream, this.opts.server.announceStream];
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
    this.hubStream.scheduleReconcile();
    this.overlayStream?.scheduleReconcile();
  }

  private onDown(reason: string): void {
    this.log.warn({ reason }, 'lost the snapserver control connection; its clients are unavailable until it is back');
    this.hubStream.connectionLost();
    this.overlayStream?.connectionLost();
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
      this.hubStream.groupTakenOver(n.params.id, n.params.stream_id);
      this.overlayStream?.groupTakenOver(n.params.id, n.params.stream_id);
    }
    const change = this.model.applyNotification(n);
    this.apply(change);
    if (change.unknown) this.refresh();
    if (TOPOLOGY.has(n.method)) {
      this.hubStream.scheduleReconcile();
      this.overlayStream?.scheduleReconcile();
    }
  }

  /** Re-reads the whole status (a notification named something the model did not know). */
  private refresh(): void {
    this.connection
      .request('Server.GetStatus')
      .then((r) => {
        this.apply(this.model.applyServer(readServerAnswer(r)));
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
      s.setConnected(available);
    }
    // A client missing from a full status may be deleted, or the server may have restarted
    // with fresh settings and not seen it yet: either way it stays listed, inactive, as the
    // hub keeps every speaker it has known (its DeviceID comes back when the client does).
    for (const id of change.removed) {
      const s = this.speakers.get(id);
      if (!s) continue;
      this.hubStream.clientGone(id, 'snapserver no longer lists the snapclient');
      this.overlayStream?.clientGone(id, 'snapserver no longer lists the snapclient');
      s.setConnected(false);
    }
  }
}
