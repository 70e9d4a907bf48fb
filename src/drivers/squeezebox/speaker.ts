import { clampVolume, VOLUME_MAX } from '../../core/volume-range';
import type { Logger } from '../../logger';
import { FfmpegMissingError, findProgram } from '../../util/find-program';
import { BaseSpeaker } from '../base-speaker';
import type { MediaRequest, SpeakerCapabilities, SpeakerInfo, SpeakerSnapshot } from '../driver';
import { STREAM_FORMATS, type AudioOffer } from './audio-server';
import { hubMs, type PlayerConnection } from './connection';
import { aude, audg, setdNameQuery, strm, type Helo, type Stat } from './protocol';
import type { SyncGroup } from './sync-group';

export interface SpeakerHost {
  readonly audioPort: number;
  offer(offer: AudioOffer): string;
  revoke(path: string): void;
  playOn(speakers: SqueezeboxSpeaker[], media: MediaRequest): Promise<PromiseSettledResult<void>[]>;
  join(speaker: SqueezeboxSpeaker, group: SyncGroup): Promise<void>;
  readonly startTimeoutMs: number;
  readonly syncLeadMs: number;
  readonly syncToleranceMs: number;
}

/** What a player does with the hub's current stream, from its STAT reports. */
type Phase = 'loading' | 'buffered' | 'playing' | 'paused' | 'done';

interface Current {
  group: SyncGroup;
  path: string;
  /** Media seconds at which this player's stream starts. */
  offset: number;
  phase: Phase;
  /** STMc seen: reports from now on are about this stream (not the one before it). */
  connected: boolean;
  elapsedMs: number;
  /** Hub ms of the report elapsedMs came with. */
  statAt: number;
  error?: string;
  /** Signed ms this player plays behind (+) or ahead (−) of its group, last two reports. */
  deviations: number[];
  correctedAt: number;
  /** STMu came before the start moment was marked. */
  endedEarly?: boolean;
}

interface Waiter {
  current: Current;
  events: string[];
  resolve(): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

/** Samples of (hub receive time − player jiffies) kept; their minimum maps the player's clock. */
const CLOCK_SAMPLES = 32;
/** A correction is not repeated sooner than this (ms): the player needs reports from after it. */
const CORRECTION_GAP_MS = 3000;
/** Reports whose median a correction is based on. */
const DEVIATION_SAMPLES = 5;
/** A larger deviation is not a drift but a fault (a stalled player): it is left alone. */
const MAX_CORRECTION_MS = 2000;
const DEFAULT_VOLUME = 20;

/** The hub's memory of players' volumes (src/persistence/player-volumes.ts), by MAC. */
export interface VolumeMemory {
  get(mac: string): number | undefined;
  set(mac: string, volume: number): void;
}

/** What snapshot() keeps: the group the speaker played in, to rejoin it in sync. */
interface SqueezeboxSnapshotData {
  group?: SyncGroup;
}

/**
 * One Squeezebox player (squeezelite, piCorePlayer, a real Squeezebox), known by its MAC. It
 * plays what the hub serves it; its state, position and start come from its STAT reports.
 */
export class SqueezeboxSpeaker extends BaseSpeaker {
  // No duck: duckUnavailable says why (the generic reason, "plays the media itself", would be wrong here).
  readonly capabilities: SpeakerCapabilities = { mute: false, snapshot: true, seek: true, syncGroup: true };
  duckUnavailable(): string {
    return 'Squeezebox: squeezelite buffers several seconds of the stream ahead, so a voice mixed in by the hub would be heard seconds late';
  }
  conn?: PlayerConnection;
  helo?: Helo;
  current?: Current;
  private waiters = new Set<Waiter>();
  private clockSamples: number[] = [];
  private clockOffset?: number;
  private codecLogged = false;

  constructor(
    id: string,
    info: SpeakerInfo,
    private readonly host: SpeakerHost,
    private readonly log: Logger,
    /** Where the player's volume is kept across hub restarts (squeezelite forgets it): sent at HELO. */
    memory?: VolumeMemory,
  ) {
    super(id, 'squeezebox', info, { volume: memory?.get(info.macAddress) ?? DEFAULT_VOLUME, available: false });
    // Every volume the player is given (a set, an announcement's level and its restore) is its last one.
    if (memory) this.on('volume', (v: number) => memory.set(info.macAddress, v));
  }

  // ---- connection ----------------------------------------------------------------------------

  attach(conn: PlayerConnection, helo: Helo): void {
    this.conn = conn;
    this.helo = helo;
    this.clockSamples = [];
    this.clockOffset = undefined;
    this.updateInfo({
      modelName: helo.modelName,
      version: helo.firmware,
      macAddress: helo.mac.toUpperCase(),
      ipAddress: conn.remoteAddress,
      port: conn.socket.remotePort,
    });
    conn.send(strm({ command: 'q' }));
    conn.send(aude(true));
    conn.send(audg(this.volume, VOLUME_MAX));
    conn.send(setdNameQuery());
    this.keepalive();
    this.setAvailable(true);
  }

  detach(conn: PlayerConnection): void {
    if (this.conn !== conn) return;
    this.conn = undefined;
    this.leave();
    this.failWaiters(new Error('the player disconnected'));
    this.setAvailable(false, () => this.setPlayState('stopped', 'error', 'the player disconnected'));
  }

  rename(name: string): void {
    this.updateInfo({ name });
  }

  /** `strm t`: the player answers STMt (a clock sample) and knows the server is alive. */
  keepalive(): void {
    this.conn?.send(strm({ command: 't', value: Math.floor(hubMs()) >>> 0 }));
  }

  /** Hub ms → the player's jiffies (its millisecond clock), from the least-delayed reports. */
  jiffiesAt(hubTime: number): number {
    return Math.round(hubTime - (this.clockOffset ?? 0)) >>> 0;
  }

  /** The player's jiffies → hub ms. */
  hubTimeOf(jiffies: number): number {
    const off = this.clockOffset ?? 0;
    // Unwrap against now: jiffies are 32-bit milliseconds.
    const now = hubMs();
    let t = jiffies + off;
    while (t < now - 2 ** 31) t += 2 ** 32;
    while (t > now + 2 ** 31) t -= 2 ** 32;
    return t;
  }

  private clockSample(stat: Stat, receivedAt: number): void {
    const sample = receivedAt - stat.jiffies;
    if (this.clockOffset !== undefined && Math.abs(sample - this.clockOffset) > 2 ** 30) this.clockSamples = []; // wrapped or rebooted
    this.clockSamples.push(sample);
    if (this.clockSamples.length > CLOCK_SAMPLES) this.clockSamples.shift();
    this.clockOffset = Math.min(...this.clockSamples);
  }

  // ---- reports -----------------------------------------------------------------------------

  onStat(stat: Stat, receivedAt: number): void {
    this.clockSample(stat, receivedAt);
    const cur = this.current;
    if (!cur) return;
    if (stat.event !== 'STMt')
      this.log.debug({ event: stat.event, elapsedMs: stat.elapsedMs, phase: cur.phase, connected: cur.connected }, 'squeezebox: player report');
    if (stat.event === 'STMc') cur.connected = true;
    if (!cur.connected) return;
    cur.elapsedMs = stat.elapsedMs;
    cur.statAt = this.hubTimeOf(stat.jiffies);
    switch (stat.event) {
      case 'STMl':
        if (cur.phase === 'loading') cur.phase = 'buffered';
        break;
      case 'STMs':
        if (cur.phase === 'buffered' || cur.phase === 'loading') cur.phase = 'playing';
        if (cur.phase === 'playing') this.setPlayState('playing');
        break;
      case 'STMr':
        if (cur.phase === 'paused') {
          cur.phase = 'playing';
          this.setPlayState('playing');
        }
        break;
      case 'STMp':
        cur.phase = 'paused';
        this.setPlayState('paused');
        break;
      case 'STMt':
        if (cur.phase === 'playing') this.keepInSync(cur);
        break;
      case 'STMn':
        this.finish(cur, 'error', 'the player could not decode the stream');
        break;
      case 'STMu':
        if (cur.phase === 'playing') this.finish(cur, 'ended');
        // Over before startAt() marked it playing (a short media on a busy hub): it ends right after.
        else if (cur.phase === 'buffered') cur.endedEarly = true;
        break;
      case 'STMo':
        this.log.debug({ speaker: this.id }, 'squeezebox: player ran out of audio while streaming');
        break;
    }
    for (const w of [...this.waiters]) {
      if (w.current !== cur) continue;
      if (w.events.includes(stat.event)) this.settle(w);
    }
  }

  private finish(cur: Current, reason: 'ended' | 'error', detail?: string): void {
    cur.phase = 'done';
    cur.error = detail;
    this.leave();
    this.setPlayState('stopped', reason, detail);
  }

  /** Leaves the group it plays in (the others go on); the last one out ends it. */
  leave(): void {
    const cur = this.current;
    if (!cur) return;
    this.current = undefined;
    this.host.revoke(cur.path);
    cur.group.members.delete(this);
    if (!cur.group.members.size) cur.group.end();
    for (const w of [...this.waiters]) if (w.current === cur) this.settle(w, new Error('the play was replaced'));
  }

  private waitFor(cur: Current, events: string[], timeoutMs: number, what: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const w: Waiter = {
        current: cur,
        events,
        resolve,
        reject,
        timer: setTimeout(() => this.settle(w, new Error(`the player did not report ${what} within ${timeoutMs} ms`)), timeoutMs),
      };
      this.waiters.add(w);
    });
  }

  private settle(w: Waiter, err?: Error): void {
    if (!this.waiters.delete(w)) return;
    clearTimeout(w.timer);
    if (err) w.reject(err);
    else w.resolve();
  }

  private failWaiters(err: Error): void {
    for (const w of [...this.waiters]) this.settle(w, err);
  }

  // ---- the group's start -------------------------------------------------------------------

  /** Sends the stream (autostart off) and resolves once the player reports its buffer ready (STMl). */
  async load(group: SyncGroup, offset: number): Promise<void> {
    const conn = this.conn;
    if (!conn || !this.available) throw new Error('speaker is not reachable');
    // Every media goes through ffmpeg: without it the play fails here, saying so, instead of
    // the player getting a dead stream (`spawn ffmpeg ENOENT`). Looked up per play: installing it needs no restart.
    if (!findProgram('ffmpeg')) throw new FfmpegMissingError();
    this.leave();
    const codec = this.codec();
    const cur: Current = {
      group,
      path: '',
      offset,
      phase: 'loading',
      connected: false,
      elapsedMs: 0,
      statAt: hubMs(),
      deviations: [],
      correctedAt: 0,
    };
    cur.path = this.host.offer({
      url: group.url,
      startAt: offset,
      codec,
      onFetch: () => this.log.debug({ speaker: this.id }, 'squeezebox: player fetched its audio'),
      onError: (detail) => {
        if (this.current !== cur) return;
        for (const w of [...this.waiters]) if (w.current === cur) this.settle(w, new Error(detail));
        if (cur.phase === 'playing' || cur.phase === 'paused') this.finish(cur, 'error', detail);
        else cur.error = detail;
      },
    });
    this.current = cur;
    group.members.add(this);
    const buffered = this.waitFor(cur, ['STMl'], this.host.startTimeoutMs, 'its buffer ready (STMl)');
    // 's' alone would queue the new stream behind what the player still holds (gapless, as LMS
    // plays albums): a flush first makes it start with this stream.
    conn.send(strm({ command: 'q' }));
    conn.send(
      strm({
        command: 's',
        autostart: '0',
        format: STREAM_FORMATS[codec].format,
        thresholdKb: 64,
        outputThreshold: 1,
        serverPort: this.host.audioPort,
        request: `GET ${cur.path} HTTP/1.0\r\n\r\n`,
      }),
    );
    try {
      await buffered;
    } catch (e) {
      if (this.current === cur) this.leave();
      throw e;
    }
  }

  /**
   * Starts the loaded stream at hub time `at` (on the player's own clock). Resolves at that
   * moment once the player has taken the command (STMr): its STMs comes with its next report,
   * up to a second later, and carries the elapsed time from the real start.
   */
  async startAt(at: number): Promise<void> {
    const cur = this.current;
    if (!cur || !this.conn) throw new Error('speaker is not reachable');
    const acked = this.waitFor(cur, ['STMr', 'STMs'], this.host.startTimeoutMs, 'its start (STMr)');
    this.conn.send(strm({ command: 'u', value: this.jiffiesAt(at) || 1 }));
    await acked;
    const wait = at - hubMs();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (this.current !== cur) throw new Error(cur.error ?? 'the play was replaced');
    // The media failed to decode while the player took the command: no play.
    if (cur.error) {
      this.leave();
      throw new Error(cur.error);
    }
    if (cur.phase === 'buffered') {
      cur.phase = 'playing';
      cur.elapsedMs = 0;
      cur.statAt = at;
      this.setPlayState('playing');
      // The core watches the speaker once play() resolves: the end is reported after that.
      if (cur.endedEarly) setTimeout(() => this.current === cur && this.finish(cur, 'ended'), 50);
    }
  }

  /**
   * Sync keeping: the player's start, from its report (its clock minus what it played), against
   * the moment its group planned. A player behind skips ahead, one ahead plays a little silence.
   */
  private keepInSync(cur: Current): void {
    const g = cur.group;
    if (g.state !== 'playing' || cur.elapsedMs < 1000) return;
    const started = cur.statAt - cur.elapsedMs;
    cur.deviations = [...cur.deviations.slice(-(DEVIATION_SAMPLES - 1)), started - g.startTimeFor(cur.offset)];
    const mine = this.deviation();
    if (mine === undefined || hubMs() - cur.correctedAt < CORRECTION_GAP_MS) return;
    // Against the others (the median of their own medians), not the plan: players that are all
    // a little late together are in sync, and one that joins lines up with what is heard.
    const others = [...g.members].filter((m) => m !== this).map((m) => (m as SqueezeboxSpeaker).deviation());
    const known = others.filter((d): d is number => d !== undefined).sort((x, y) => x - y);
    if (!known.length) return;
    const off = mine - known[Math.floor(known.length / 2)];
    const spread = Math.max(...cur.deviations) - Math.min(...cur.deviations);
    const tol = this.host.syncToleranceMs;
    if (Math.abs(off) <= tol || spread > Math.max(2 * tol, Math.abs(off))) return;
    const ms = Math.round(Math.abs(off));
    if (ms > MAX_CORRECTION_MS) return;
    cur.correctedAt = hubMs();
    cur.deviations = [];
    this.log.debug(
      { speaker: this.id, offsetMs: Math.round(off) },
      off > 0 ? 'squeezebox: player behind its group, skipping' : 'squeezebox: player ahead of its group, pausing',
    );
    this.conn?.send(strm({ command: off > 0 ? 'a' : 'p', value: ms }));
  }

  /** Median of this player's last reports of how late (+) it plays against its group's plan (ms). */
  deviation(): number | undefined {
    const d = this.current?.deviations;
    if (!d || d.length < DEVIATION_SAMPLES || this.current?.phase !== 'playing') return undefined;
    return [...d].sort((x, y) => x - y)[Math.floor(d.length / 2)];
  }

  /** pcm when the player has it (every squeezelite), else a codec it lists: the hub transcodes with ffmpeg either way. */
  private codec(): AudioOffer['codec'] {
    const codecs = this.helo?.codecs ?? [];
    const codec = codecs.length === 0 || codecs.includes('pcm') ? 'pcm' : codecs.includes('flc') ? 'flac' : 'mp3';
    if (!this.codecLogged) {
      this.codecLogged = true;
      this.log.info(
        { speaker: this.id, codecs: codecs.join(','), sent: codec },
        `squeezebox: ${this.info().name} gets every media decoded by the hub (ffmpeg) and sent as ${codec}`,
      );
    }
    return codec;
  }

  // ---- Speaker -----------------------------------------------------------------------------

  async play(media: MediaRequest): Promise<void> {
    const [r] = await this.host.playOn([this], media);
    if (r.status === 'rejected') throw r.reason;
  }

  async pause(): Promise<void> {
    this.assertAvailable();
    const cur = this.current;
    if (!cur || cur.phase !== 'playing') return;
    cur.group.pause();
    const paused = this.waitFor(cur, ['STMp'], this.host.startTimeoutMs, 'its pause (STMp)');
    this.conn!.send(strm({ command: 'p' }));
    await paused;
  }

  async resume(): Promise<void> {
    this.assertAvailable();
    const cur = this.current;
    if (!cur || cur.phase !== 'paused') return;
    const at = cur.group.resume(this.host.syncLeadMs);
    const resumed = this.waitFor(cur, ['STMr'], this.host.startTimeoutMs, 'its resume (STMr)');
    this.conn!.send(strm({ command: 'u', value: this.jiffiesAt(at) || 1 }));
    await resumed;
    cur.deviations = [];
  }

  async stop(): Promise<void> {
    const had = this.current;
    this.leave();
    this.conn?.send(strm({ command: 'q' }));
    if (had || this.state !== 'stopped') this.setPlayState('stopped', 'stopped');
  }

  /** Seconds into the media, from the player's last report (moving on while it plays). */
  position(): number | undefined {
    const cur = this.current;
    if (!cur) return undefined;
    if (cur.phase === 'loading' || cur.phase === 'buffered') return cur.offset;
    const running = cur.phase === 'playing' ? Math.max(0, hubMs() - cur.statAt) : 0;
    return cur.offset + (cur.elapsedMs + running) / 1000;
  }

  async setVolume(volume: number): Promise<void> {
    this.assertAvailable();
    this.setReportedVolume(clampVolume(volume));
    this.conn!.send(audg(this.volume, VOLUME_MAX));
  }

  // ---- snapshot / restore (announcements) --------------------------------------------------

  async snapshot(): Promise<SpeakerSnapshot> {
    const g = this.current?.group;
    return {
      state: this.state,
      url: g?.url,
      duration: g?.media.duration,
      title: g?.media.title,
      position: this.position(),
      volume: this.volume,
      takenAt: Date.now(),
      driver: { group: g } satisfies SqueezeboxSnapshotData,
    };
  }

  async restore(snapshot: SpeakerSnapshot, options?: { volumeOnly?: boolean }): Promise<void> {
    if (this.available) await this.setVolume(snapshot.volume);
    if (options?.volumeOnly) return;
    const g = (snapshot.driver as SqueezeboxSnapshotData | undefined)?.group;
    if (g && g.state === 'playing' && g.members.size > 0 && snapshot.state !== 'stopped') {
      await this.host.join(this, g);
      return;
    }
    if (snapshot.state === 'playing' && snapshot.url) {
      const elapsed = Math.max(0, (Date.now() - snapshot.takenAt) / 1000);
      await this.play({ url: snapshot.url, duration: snapshot.duration, title: snapshot.title, startAt: (snapshot.position ?? 0) + elapsed });
      return;
    }
    await this.stop();
  }
}
