import { EventEmitter } from 'node:events';
import { connect } from 'node:net';
import type { Logger } from '../../logger';
import { LimitedLog } from '../../logging/limited-log';
import { AirPlayError } from './rtsp';
import { digitId, type DriverEvents, type MediaRequest, type OverlayHandle, type OverlayRequest, type SpeakerDriver } from '../driver';
import type { AirPlayConfig } from './config';
import type { ReceiverAddress } from './session';
import { voiceGainDb } from '../../audio/duck-mix';
import { AirPlayDuck } from './duck';
import { AirPlaySpeaker, type SpeakerHost } from './speaker';
import { AirPlayStream } from './stream';
import { UdpChannels } from './udp';

export interface AirPlayDriverOptions {
  config: AirPlayConfig;
  logger: Logger;
  version: string;
  interfaceName?: string;
  networkAddress?: string;
  /** media.ffmpegPath. */
  ffmpegPath?: string;
}

/** How often an unreachable receiver is tried again (ms). */
const PROBE_MS = 3000;
const DEFAULT_VOLUME = 20;

/**
 * AirPlay 1 (RAOP) receivers: given by address and/or found by mDNS. The hub is the sender;
 * each play is an AirPlayStream that one or several receivers join, so a party play is one
 * RTP timeline every receiver plays in step.
 */
export class AirPlayDriver extends EventEmitter<DriverEvents> implements SpeakerDriver, SpeakerHost {
  readonly name = 'airplay';
  private readonly udp = new UdpChannels();
  private readonly byKey = new Map<string, AirPlaySpeaker>();
  private probeTimer?: NodeJS.Timeout;
  private stopped = false;
  private discovery?: { stop(): void };
  /** Warn lines about failing receivers, rate-limited: hostile receivers cannot flood the log. */
  private readonly faults: LimitedLog;
  private readonly losses: LimitedLog;

  constructor(private readonly opts: AirPlayDriverOptions) {
    super();
    this.faults = new LimitedLog(opts.logger, 'airplay receiver failed the protocol; inactive for a while');
    this.losses = new LimitedLog(opts.logger, 'airplay receiver lost');
  }

  async start(): Promise<void> {
    await this.udp.open();
    for (const r of this.opts.config.receivers) {
      this.addReceiver(
        `${r.host}:${r.port}`,
        { host: r.host, port: r.port, password: 'password' in r ? r.password : undefined },
        ('name' in r && r.name) || `AirPlay ${r.host}:${r.port}`,
      );
    }
    await this.probeAll();
    this.probeTimer = setInterval(() => void this.probeAll(), PROBE_MS);
    const wantDiscovery = this.opts.config.discovery ?? this.opts.config.receivers.length === 0;
    if (wantDiscovery) {
      const { startDiscovery } = await import('./discovery');
      this.discovery = startDiscovery(this.opts, (found) => {
        const existing = this.byKey.get(found.deviceId);
        if (existing) {
          existing.address = { ...existing.address, host: found.host, port: found.port };
          existing.rename(found.name);
          if (found.alive) existing.markAvailable(true);
          else if (!existing.member) existing.markAvailable(false);
          return;
        }
        if (!found.alive) return;
        const s = this.addReceiver(found.deviceId, { host: found.host, port: found.port }, found.name, found.mac);
        s.markAvailable(true);
      });
    }
  }

  private addReceiver(key: string, address: ReceiverAddress, name: string, mac = ''): AirPlaySpeaker {
    const id = digitId(`airplay:${key}`);
    const speaker = new AirPlaySpeaker(
      id,
      {
        name,
        groupName: 'AirPlay',
        groupId: digitId('airplay-group', 10),
        modelName: 'AirPlay receiver',
        version: '',
        role: 21,
        macAddress: mac,
        ipAddress: address.host,
        port: address.port,
        wifiSignalStrength: 0,
      },
      address,
      this,
      this.opts.logger.child({ speaker: id }),
      DEFAULT_VOLUME,
    );
    this.byKey.set(key, speaker);
    this.emit('speakerAdded', speaker);
    return speaker;
  }

  /**
   * A receiver is available when its RTSP port accepts a connection (checked while it is not
   * playing): receivers given by address have no other signal, and a discovered one killed
   * without an mDNS goodbye comes back this way too.
   */
  private async probeAll(): Promise<void> {
    await Promise.all(
      [...this.byKey.values()]
        .filter((s) => !s.member)
        .map(async (s) => {
          const ok = await tcpReachable(s.address.host, s.address.port, 1500);
          if (!this.stopped && !s.member) s.markAvailable(ok);
        }),
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.probeTimer);
    this.discovery?.stop();
    await Promise.all([...this.byKey.values()].map((s) => s.stop().catch(() => undefined)));
    this.udp.close();
  }

  /** The RTP latency every play uses (receivers play this long after the hub sends). */
  get latencyMs(): number {
    return this.opts.config.latencyMs;
  }

  /** The RTP latency of an announcement played as a stream of its own. */
  get announcementLatencyMs(): number {
    return this.opts.config.announcementLatencyMs;
  }

  speakers(): AirPlaySpeaker[] {
    return [...this.byKey.values()];
  }

  playGroup(speakers: AirPlaySpeaker[], media: MediaRequest): Promise<PromiseSettledResult<void>[]> {
    return this.playOn(speakers, media);
  }

  /** One stream, every speaker joins it, then the clock starts: they all start on the same frame. */
  async playOn(speakers: AirPlaySpeaker[], media: MediaRequest): Promise<PromiseSettledResult<void>[]> {
    // A ducked announcement comes through overlay(); one played to receivers taken out of their
    // music (the core's fallback) is an announcement of its own on them.
    if (media.duck) media = { ...media, duck: undefined };
    // A speaker joining a play that runs (party join, an announced speaker coming back) joins
    // its stream: same RTP timeline, so it is in step with the others from its first frame.
    const running = this.runningStream(media);
    if (running) {
      return Promise.allSettled(speakers.map((s) => this.rejoin(s, running)));
    }
    // A speaker leaves whatever it played before; the others of that play go on.
    await Promise.all(speakers.map((s) => (s.stream && s.member ? s.stream.remove(s.member) : undefined)));
    // An announcement played as a stream of its own (media.overlay) buffers less: speech is
    // heard announcementLatencyMs after it is sent, music latencyMs (robust on a busy Wi-Fi).
    const speech = media.overlay === true;
    const stream = new AirPlayStream(
      media.url,
      media.startAt ?? 0,
      media.duration,
      this.udp,
      speech ? this.opts.config.announcementLatencyMs : this.opts.config.latencyMs,
      this.opts.logger,
      this.opts.ffmpegPath,
      speech,
    );
    stream.zone = media.zone;
    // The decode starts while the receivers shake hands.
    stream.prepare();
    stream.onEnd = (reason, detail) => {
      for (const s of speakers) if (s.stream === stream) s.markStopped(reason, detail);
    };
    const results = await Promise.allSettled(speakers.map((s) => this.joinStream(s, stream)));
    if (results.some((r) => r.status === 'fulfilled')) {
      stream.begin();
      for (const [i, s] of speakers.entries()) if (results[i].status === 'fulfilled') s.markPlaying();
    } else stream.stop();
    return results;
  }

  /**
   * The stream a play continues. A start for a zone (MediaRequest.zone: a speaker joining it,
   * one given back after an announcement) joins that zone's stream and no other, so two zones
   * on the same URL and position stay two streams; a zone's first start finds none. Without a
   * zone (an overlay) a stream without one is recognised by URL and position.
   */
  private runningStream(media: MediaRequest): AirPlayStream | undefined {
    if (media.zone === undefined && !media.startAt) return undefined;
    for (const sp of this.byKey.values()) {
      const st = sp.stream;
      if (!st || st.state !== 'playing') continue;
      if (
        media.zone !== undefined
          ? st.zone === media.zone
          : st.zone === undefined && st.url === media.url && Math.abs(st.position() - (media.startAt ?? 0)) < 5
      )
        return st;
    }
    return undefined;
  }

  private async joinStream(s: AirPlaySpeaker, stream: AirPlayStream): Promise<void> {
    let member;
    try {
      member = await stream.join(s.address, s.volume, { lost: (err) => this.lost(s, err) }, this.opts.config.requestTimeoutMs);
    } catch (e) {
      // A receiver that broke the handshake or went silent is out for a while; a refusal it
      // states (busy, password) or a receiver that is simply off is not a fault.
      if (isPeerFault(e)) this.peerFailed(s, e as AirPlayError);
      throw e;
    }
    s.peerWorked();
    s.stream = stream;
    s.member = member;
  }

  private peerFailed(s: AirPlaySpeaker, err: AirPlayError): void {
    const outMs = s.peerFailed(err);
    this.faults.warn({ speaker: s.id, address: `${s.address.host}:${s.address.port}`, code: err.code, err: err.message, outMs });
  }

  /** The speakers that hear `stream` (members; those set aside for a ducked announcement included). */
  membersOf(stream: AirPlayStream): AirPlaySpeaker[] {
    return [...this.byKey.values()].filter((s) => s.stream === stream && s.member && stream.members.has(s.member));
  }

  /**
   * A ducked announcement (issue 21) as the driver's overlay (issue 27): mixed into the stream
   * all the speakers hear, from the next packet on. The music goes on (same decode, same
   * frames), so it keeps its place, and the speakers stay playing it; each handle ends once
   * the mix has been heard (the music back at full level at the receivers).
   */
  async overlay(speakers: AirPlaySpeaker[], req: OverlayRequest): Promise<PromiseSettledResult<OverlayHandle>[]> {
    const fail = (msg: string) => speakers.map((): PromiseSettledResult<OverlayHandle> => ({ status: 'rejected', reason: new Error(msg) }));
    const ids = speakers.map((s) => s.id);
    const why = speakers.map((s) => s.duckUnavailable(ids)).find((w) => w !== undefined);
    const stream = speakers[0]?.stream;
    if (why || !stream) return fail(why ?? 'AirPlay: no receiver to mix the announcement for');
    if (speakers.some((s) => s.stream !== stream)) return fail('AirPlay: the announced receivers play different streams (one mix per stream)');
    const first = speakers[0];
    const d = new AirPlayDuck(
      req.url,
      req.duck,
      voiceGainDb(req.duck.voiceVolume, first.volume),
      stream.duck?.mixer.gain ?? 1,
      this.opts.logger,
      this.opts.ffmpegPath,
    );
    try {
      await d.start(this.opts.config.requestTimeoutMs * 2);
    } catch (e) {
      return fail((e as Error).message);
    }
    // A receiver lost while the voice was starting has already reported its fault: it is not in the mix.
    const still = speakers.filter((s) => s.stream === stream && s.member && stream.members.has(s.member) && s.state === 'playing');
    if (stream.state !== 'playing' || !still.length) {
      d.stop();
      return fail('AirPlay: the music stopped before the announcement could be mixed into it');
    }
    for (const s of still) d.targets.add(s.id);
    const handles = new Map(still.map((s) => [s.id, d.handle(s.id)]));
    d.onOver = () => this.opts.logger.info({ speakers: [...d.targets] }, 'ducked announcement over; the music is back at full level');
    stream.beginDuck(d);
    this.opts.logger.info(
      { speakers: [...d.targets], levelDb: req.duck.levelDb, fadeMs: req.duck.fadeMs },
      'announcement mixed into the AirPlay music (ducked)',
    );
    return speakers.map((s): PromiseSettledResult<OverlayHandle> => {
      const h = handles.get(s.id);
      return h
        ? { status: 'fulfilled', value: h }
        : { status: 'rejected', reason: new Error('the receiver was lost before the announcement could be mixed in') };
    });
  }

  async rejoin(s: AirPlaySpeaker, stream: AirPlayStream): Promise<void> {
    if (s.stream && s.member && s.stream !== stream) await s.stream.remove(s.member);
    if (s.stream === stream) {
      // Already in that stream (a play of the zone it plays): nothing changes.
      if (stream.state === 'paused') s.markPaused();
      else if (stream.state === 'playing') s.markPlaying();
      return;
    }
    await this.joinStream(s, stream);
    if (stream.state === 'paused') s.markPaused();
    else s.markPlaying();
  }

  lost(s: AirPlaySpeaker, err: Error): void {
    this.losses.warn({ speaker: s.id, err: err.message });
    s.markStopped('error', err.message);
    // A receiver gone mid-play (restarted, unplugged) comes back with the probe; one that broke
    // the protocol mid-play stays out for a while.
    if (isPeerFault(err)) this.peerFailed(s, err as AirPlayError);
    else s.markAvailable(false);
  }
}

/** Faults of the receiver itself: malformed or unexpected answers, or none in time. */
function isPeerFault(e: unknown): boolean {
  return e instanceof AirPlayError && (e.code === 'AirPlayProtocol' || e.code === 'AirPlayTimeout');
}

function tcpReachable(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ host, port });
    const done = (ok: boolean) => {
      clearTimeout(t);
      sock.destroy();
      resolve(ok);
    };
    const t = setTimeout(() => done(false), timeoutMs);
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
  });
}

export function createAirPlayDriver(
  config: AirPlayConfig,
  deps: { logger: Logger; version: string; interfaceName?: string; networkAddress?: string; ffmpegPath?: string },
): AirPlayDriver {
  return new AirPlayDriver({ config, ...deps });
}
