import type { Clock, TimerHandle } from '../../core/clock';
import { Backoff } from '../../util/backoff';
import { VOLUME_MAX, clampVolume } from '../../core/volume-range';
import type { Logger } from '../../logger';
import { BaseSpeaker } from '../base-speaker';
import { digitId, type MediaRequest, type SpeakerCapabilities, type SpeakerPlayState, type SpeakerSnapshot, type StopReason } from '../driver';
import type { MpdConfig, ResolvedMpdServer } from './config';
import { LimitedLog } from '../../logging/limited-log';
import { arg, MpdClient, MpdConnectionError, parseFields } from '../../protocols/mpd';
import { interfaceOf, isLoopback, mediaHostChosen, urlForMpd, type MediaRoute } from './media-route';

/** What an MPD had before the hub took it (for an announcement): all of it goes back. */
export interface MpdSnapshotData {
  files: string[];
  /** Indexes in files of the entries the hub added (its music): put back as the hub's, so a stop deletes them. */
  hubEntries?: number[];
  /** Index in files of the current song, when there is one. */
  song?: number;
  elapsed?: number;
  state: 'play' | 'pause' | 'stop';
  /** MPD's own 0–100 (or -1: no mixer). */
  volume: number;
  repeat: string;
  random: string;
  single: string;
  consume: string;
}

/** How long a play waits for MPD to decode the song before it reads as playing anyway (ms). */
const START_CONFIRM_MS = 5000;
/** A failed delete of a hub entry is tried again this many times, this far apart. */
const FORGET_ATTEMPTS = 10;
const FORGET_RETRY_MS = 1000;

/** Most queue entries a snapshot keeps (a bigger queue is put back up to this many). */
export const MAX_SNAPSHOT_QUEUE = 20_000;

/** A connection that lived this long and then closed normally starts the backoff afresh (ms). */
const STABLE_MS = 10_000;
/** Faults of the peer itself (not of the network): they never reset the backoff. */
const PEER_FAULTS = new Set(['MpdProtocol', 'MpdTooLarge', 'MpdGarbage', 'MpdTimeout']);

const STATES: Record<string, SpeakerPlayState> = { play: 'playing', pause: 'paused', stop: 'stopped' };

/** A play whose start confirmStart has not settled yet, and how its song ended if it did meanwhile. */
type PendingStart = { id: string; end?: { reason: StopReason; error?: string } };

/**
 * One MPD server as a speaker. State comes from MPD's `idle` notifications (player, mixer,
 * playlist, options) on its connection (src/protocols/mpd), each followed by one `status`; the
 * connection is re-opened with backoff when lost. A peer that breaks the protocol (garbage, an
 * answer over the bounds, an OK nobody asked for, silence) is dropped and marked inactive with
 * the reason, and its retries back off without being reset, so it costs the hub little.
 *
 * Queue policy for a spec play: the hub's track is appended to the MPD's queue and played
 * (`addid` + `playid`); the rest of the queue stays as it was. The hub's entry is deleted
 * again when it ends or is stopped, so the user's queue does not fill with hub URLs.
 */
export class MpdSpeaker extends BaseSpeaker {
  readonly capabilities: SpeakerCapabilities = { mute: false, snapshot: true, seek: true, syncGroup: false };
  private conn?: MpdClient;
  private connectedAt = 0;
  /** Warn lines about this server, rate-limited: a hostile peer cannot flood the log. */
  private readonly connectFaults: LimitedLog;
  private readonly lostFaults: LimitedLog;
  private status: Record<string, string> = {};
  private statusAt = 0;
  /** Song id of the hub's media in the MPD's queue while the hub plays on it. */
  private hubSongId?: string;
  /** Queue entries the hub added and has not deleted yet (bounded: one per play, deleted as they end). */
  private readonly added = new Set<string>();
  /**
   * The play being confirmed. A short song can be over before its start is confirmed: MPD
   * reports `stop` as soon as its output took the whole song, and an output that buffers (the
   * pipe or fifo output, ~1.7 s through ffmpeg) takes a short clip within a few ms. Its end is
   * kept here, and reported once the play has resolved (see confirmStart).
   */
  private starting?: PendingStart;
  /** Counts plays: a stop held for a play is not reported once a newer play began. */
  private plays = 0;
  private stopRequested = false;
  /**
   * What the hub last asked the MPD's player for (play/resume: playing, pause: paused), or what
   * the MPD's own app last made it: a status that differs from it, on the hub's song, is a
   * pause or resume from the user's app (emitted as ownPlayState).
   */
  private intended: 'playing' | 'paused' = 'playing';
  /**
   * Counts the hub's own play/pause/resume commands. A status asked for before the latest of
   * them may show the state before it (a pause, then a quick resume: the first status read
   * after the pause lands after the resume set `intended`), so it is not read as the app's.
   */
  private commands = 0;
  private readonly backoff: Backoff;
  private retry?: TimerHandle;
  private closed = false;
  private refreshing = false;
  private refreshAgain = false;

  constructor(
    readonly server: ResolvedMpdServer,
    private readonly config: MpdConfig,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** Where the hub's media server is reached: media URLs for an MPD on another machine are made to reach it. */
    private readonly route?: MediaRoute,
  ) {
    super(
      digitId(`mpd:${server.address}`),
      'mpd',
      {
        name: server.name,
        groupName: server.name,
        groupId: digitId(`mpd-group:${server.address}`, 10),
        modelName: 'MPD',
        version: '',
        role: 21,
        macAddress: '',
        ipAddress: server.host,
        port: server.port,
        wifiSignalStrength: 0,
      },
      { available: false },
    );
    // First retry after reconnectMinMs..2×reconnectMinMs, then doubling up to reconnectMaxMs.
    this.backoff = new Backoff(config.reconnectMinMs * 2, config.reconnectMaxMs);
    this.connectFaults = new LimitedLog(log, `mpd: cannot connect to ${server.address}`);
    this.lostFaults = new LimitedLog(log, `mpd: connection to ${server.address} lost; speaker inactive until it is back`);
  }

  start(): void {
    void this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.retry?.cancel();
    this.conn?.close();
    this.conn = undefined;
  }

  // ---- connection ------------------------------------------------------------------------

  private async connect(): Promise<void> {
    if (this.closed) return;
    let conn: MpdClient;
    try {
      const { host, port, password } = this.server;
      conn = await MpdClient.connect({ host, port, password, timeoutMs: this.config.requestTimeoutMs });
    } catch (err) {
      this.scheduleReconnect(err);
      return;
    }
    if (this.closed) return conn.close();
    this.conn = conn;
    conn.onClose((err) => this.lost(conn, err));
    conn.onSystem((sub) => {
      if (sub === 'player' || sub === 'mixer' || sub === 'playlist' || sub === 'options') void this.refresh();
    });
    this.updateInfo({ modelName: `MPD ${conn.version}`, version: conn.version });
    try {
      await this.refreshNow();
    } catch (err) {
      // A fault of the connection itself has already been handled by lost().
      if (this.conn !== conn) return;
      this.conn = undefined;
      conn.close();
      this.scheduleReconnect(err);
      return;
    }
    // The peer may have failed right after answering (an extra OK in the same packet).
    if (this.conn !== conn || conn.closed) return;
    this.connectedAt = this.clock.now();
    this.log.info({ version: conn.version }, `mpd: connected to ${this.server.address}`);
    this.warnUnreachableMedia(conn);
    this.setAvailable(true);
  }

  private mediaWarned = false;

  /** Once: an MPD on another machine while the media server listens on loopback only (the fix named). */
  private warnUnreachableMedia(conn: MpdClient): void {
    const { local, remote } = conn.addresses;
    const route = this.route;
    if (this.mediaWarned || !route || isLoopback(remote) || mediaHostChosen(route) || route.bindHost === '0.0.0.0' || route.bindHost === '::') return;
    this.mediaWarned = true;
    const iface = local ? interfaceOf(local) : undefined;
    this.log.warn(
      { local, interface: iface },
      `mpd: ${this.server.address} is on another machine, but the hub's media server listens on 127.0.0.1 only: plays of the hub's media, TTS and announcements on it fail until the hub is started with --interface ${iface ?? '<the interface that reaches it>'} (or --media-host 0.0.0.0)`,
    );
  }

  private lost(conn: MpdClient, err: MpdConnectionError): void {
    if (this.conn !== conn) return;
    this.conn = undefined;
    this.hubSongId = undefined;
    this.starting = undefined;
    this.added.clear();
    if (this.closed) return;
    const wasUp = this.connectedAt > 0;
    // Only a connection that worked for a while earns a fresh backoff: a peer that fails soon
    // after every connect (or breaks the protocol) is retried less and less often.
    if (wasUp && !PEER_FAULTS.has(err.code) && this.clock.now() - this.connectedAt >= STABLE_MS) this.backoff.reset();
    this.connectedAt = 0;
    this.lostFaults.warn({ code: err.code, err: err.message });
    this.setAvailable(false, () => this.setPlayState('stopped', 'error', `connection to MPD lost: ${err.message}`));
    this.scheduleReconnect(undefined);
  }

  /** The hub's one backoff (src/util/backoff.ts): doubling from reconnectMinMs, capped, jittered so many hubs do not retry in step. */
  private scheduleReconnect(err: unknown): void {
    if (this.closed) return;
    const delay = this.backoff.next();
    if (err) {
      const code = err instanceof MpdConnectionError ? err.code : 'MpdRefused';
      this.connectFaults.warn({ code, err: (err as Error).message, attempt: this.backoff.attempts, retryMs: delay });
    }
    this.retry?.cancel();
    this.retry = this.clock.setTimer(() => void this.connect(), delay);
  }

  private async send(command: string | string[]): Promise<string> {
    const conn = this.conn;
    if (!conn) throw new Error('MPD is not reachable');
    return conn.send(command);
  }

  // ---- state -------------------------------------------------------------------------------

  /** Coalesces idle notifications: one status at a time, one more if any came meanwhile. */
  private async refresh(): Promise<void> {
    if (this.refreshing) {
      this.refreshAgain = true;
      return;
    }
    this.refreshing = true;
    try {
      do {
        this.refreshAgain = false;
        await this.refreshNow();
      } while (this.refreshAgain);
    } catch (err) {
      this.log.debug({ err: (err as Error).message }, 'mpd: status failed');
    } finally {
      this.refreshing = false;
    }
  }

  private async refreshNow(): Promise<void> {
    const asked = this.commands;
    const st = parseFields(await this.send('status'));
    this.status = st;
    this.statusAt = this.clock.now();
    const vol = Number(st.volume);
    if (Number.isFinite(vol) && vol >= 0) this.setReportedVolume(Math.round((vol * VOLUME_MAX) / 100));
    const state = STATES[st.state] ?? 'stopped';
    const before = this.state;
    if (this.hubSongId !== undefined && (st.songid !== this.hubSongId || state === 'stopped')) {
      // The hub's media is over: it ended, was stopped, or the MPD's own app played something else.
      const id = this.hubSongId;
      this.hubSongId = undefined;
      const reason = this.stopRequested ? 'stopped' : st.error ? 'error' : 'ended';
      void this.forget(id);
      if (this.starting?.id === id) {
        // Over before its start was confirmed: the start reports it (a play the caller has not
        // seen resolve yet has no listener for its end).
        this.starting.end = { reason, error: st.error };
        return;
      }
      this.setPlayState('stopped', reason, st.error);
      if (state === 'stopped') return;
    }
    // The play state waits for the pending start's outcome (its song is over already).
    if (this.starting?.end) return;
    this.setPlayState(state, state === 'stopped' ? (st.error ? 'error' : 'ended') : undefined, st.error);
    if (asked === this.commands) this.followOwnControl(before, state);
  }

  /** A pause or resume of the hub's song that the hub did not ask for came from the MPD's own app. */
  private followOwnControl(before: SpeakerPlayState, state: SpeakerPlayState): void {
    if (this.hubSongId === undefined || before === state || before === 'stopped' || state === 'stopped') return;
    if (state === this.intended) return;
    this.intended = state;
    this.log.info(`mpd: ${this.server.address} was ${state === 'paused' ? 'paused' : 'resumed'} from its own app`);
    this.emit('ownPlayState', state);
  }

  // ---- operations --------------------------------------------------------------------------

  async play(media: MediaRequest): Promise<void> {
    this.assertAvailable();
    const old = this.hubSongId;
    this.hubSongId = undefined;
    this.stopRequested = false;
    this.intended = 'playing';
    this.commands++;
    const play = ++this.plays;
    // Before anything changes on the MPD: a URL it cannot fetch fails here, saying how to fix it.
    const url = this.route && this.conn ? urlForMpd(media.url, this.conn.addresses, this.route, this.server.address) : media.url;
    const added = parseFields(await this.send(`addid ${arg(url)}`));
    const id = added.Id;
    if (!id || !/^\d+$/.test(id)) throw new Error('MPD did not add the media');
    this.added.add(id);
    const cmds = ['clearerror', `playid ${id}`];
    if (media.startAt && media.startAt > 0) cmds.push(`seekid ${id} ${media.startAt.toFixed(3)}`);
    const start: PendingStart = { id };
    let ended: StopReason | undefined;
    try {
      await this.send(cmds);
      this.hubSongId = id;
      this.starting = start;
      await this.refreshNow();
      ended = await this.confirmStart(start);
    } catch (e) {
      // A play MPD refused (it decodes the URL at once: a 404 is an ACK) leaves no entry behind.
      void this.forget(id);
      if (old) void this.forget(old);
      throw e;
    } finally {
      if (this.starting === start) this.starting = undefined;
      if (old && (this.hubSongId === id || ended)) void this.forget(old);
    }
    if (ended) {
      // It played, and its end is due: after the caller has seen the play resolve and listens
      // for the end (a turn of the event loop), never before.
      this.setPlayState('playing');
      setImmediate(() => {
        if (this.plays !== play || this.closed) return;
        this.setPlayState('stopped', this.stopRequested ? 'stopped' : ended);
        void this.refresh();
      });
    }
  }

  /**
   * MPD takes any URL at once and fails while it decodes (a 404 ends the song a moment later
   * with `error`): the play resolves once MPD decodes the song (status `audio` set) and
   * rejects when it stopped on it, so a play it cannot play is a failed play. A slow stream
   * that has not decoded within START_CONFIRM_MS reads as playing, as before.
   *
   * A song that is over before a status showed it decoding (a short clip MPD's output took at
   * once, or another client's stop or clear) started all the same: only an end with MPD's
   * `error` is a failed play, and the hub's own stop a cancelled one. Resolves with how it
   * ended, when it did.
   */
  private async confirmStart(start: PendingStart): Promise<StopReason | undefined> {
    const { id } = start;
    const end = Date.now() + START_CONFIRM_MS;
    for (;;) {
      if (start.end) {
        const { reason, error } = start.end;
        if (reason === 'ended') return reason;
        this.setPlayState('stopped', reason, error);
        throw new Error(
          reason === 'stopped' ? 'the play was stopped before MPD started it' : `MPD could not play the media${error ? `: ${error}` : ''}`,
        );
      }
      // The connection was lost, or a newer play (or a restore) took over, while it started.
      if (this.starting !== start || this.hubSongId !== id) throw new Error('MPD could not play the media');
      if (this.status.songid === id && this.status.state === 'play' && this.status.audio) return undefined;
      if (this.status.songid === id && this.status.state === 'pause') return undefined;
      if (Date.now() >= end) return undefined;
      await new Promise((r) => setTimeout(r, 50));
      // Through the one coalescing reader: two status reads in flight could land out of order
      // and show a pause and resume nobody made (read as the MPD's own app).
      await this.refresh();
    }
  }

  async pause(): Promise<void> {
    this.assertAvailable();
    this.intended = 'paused';
    this.commands++;
    await this.send('pause 1');
  }

  async resume(): Promise<void> {
    this.assertAvailable();
    this.intended = 'playing';
    this.commands++;
    await this.send('pause 0');
  }

  async stop(): Promise<void> {
    this.assertAvailable();
    this.stopRequested = true;
    await this.send('stop');
    await Promise.all([...this.added].map((id) => this.forget(id)));
  }

  /**
   * Deletes a queue entry the hub added (gone already is fine: the user may have removed it).
   * A delete that did not get through (a slow MPD timed out, the link dropped) is tried again
   * a few times, so the hub's entries never stay in the user's queue.
   */
  private async forget(id: string, attempt = 0): Promise<void> {
    try {
      await this.send(`deleteid ${id}`);
      this.added.delete(id);
    } catch (e) {
      // MPD's ACK for an id it does not have: already gone.
      if (/ACK|No such song/i.test((e as Error).message) || attempt >= FORGET_ATTEMPTS) {
        this.added.delete(id);
        return;
      }
      const timer = setTimeout(() => {
        if (this.added.has(id) && id !== this.hubSongId) void this.forget(id, attempt + 1);
      }, FORGET_RETRY_MS);
      timer.unref();
    }
  }

  position(): number | undefined {
    const elapsed = Number(this.status.elapsed);
    if (!Number.isFinite(elapsed)) return undefined;
    return this.status.state === 'play' ? elapsed + (this.clock.now() - this.statusAt) / 1000 : elapsed;
  }

  async setVolume(volume: number): Promise<void> {
    this.assertAvailable();
    const v = clampVolume(volume);
    await this.send(`setvol ${Math.round((v * 100) / VOLUME_MAX)}`);
    this.setReportedVolume(v);
  }

  // ---- snapshot / restore ------------------------------------------------------------------

  async snapshot(): Promise<SpeakerSnapshot> {
    this.assertAvailable();
    const st = parseFields(await this.send('status'));
    const files: string[] = [];
    const hubEntries: number[] = [];
    for (const entry of (await this.send('playlistinfo')).split(/\n(?=file: )/)) {
      const file = /^file: (.*)$/m.exec(entry)?.[1];
      if (file === undefined || files.length >= MAX_SNAPSHOT_QUEUE) continue;
      const id = /^Id: (\d+)$/m.exec(entry)?.[1];
      if (id && this.added.has(id)) hubEntries.push(files.length);
      files.push(file);
    }
    // Numbers from the peer are checked before they go back to it in the restore's commands.
    const song = /^\d{1,9}$/.test(st.song ?? '') ? Number(st.song) : undefined;
    const rawElapsed = Number(st.elapsed);
    const elapsed = st.elapsed !== undefined && Number.isFinite(rawElapsed) && rawElapsed >= 0 ? rawElapsed : undefined;
    const rawVolume = Number(st.volume ?? -1);
    const data: MpdSnapshotData = {
      files,
      hubEntries,
      song: song !== undefined && song < files.length ? song : undefined,
      elapsed,
      state: st.state === 'play' || st.state === 'pause' ? st.state : 'stop',
      volume: Number.isInteger(rawVolume) && rawVolume >= 0 && rawVolume <= 100 ? rawVolume : -1,
      repeat: st.repeat ?? '0',
      random: st.random ?? '0',
      single: st.single ?? '0',
      consume: st.consume ?? '0',
    };
    return {
      state: STATES[data.state],
      url: song !== undefined ? files[song] : undefined,
      position: elapsed,
      volume: data.volume >= 0 ? Math.round((data.volume * VOLUME_MAX) / 100) : this.volume,
      takenAt: this.clock.now(),
      driver: data,
    };
  }

  async restore(snapshot: SpeakerSnapshot, options: { volumeOnly?: boolean } = {}): Promise<void> {
    this.assertAvailable();
    const data = snapshot.driver as MpdSnapshotData | undefined;
    const rawVolume = data && data.volume >= 0 ? data.volume : Math.round((snapshot.volume * 100) / VOLUME_MAX);
    if (options.volumeOnly || !data) {
      await this.send(`setvol ${rawVolume}`);
      return;
    }
    this.hubSongId = undefined;
    this.added.clear();
    const cmds = ['clear', ...data.files.map((f) => `add ${arg(f)}`)];
    cmds.push(`repeat ${data.repeat === '1' ? 1 : 0}`, `random ${data.random === '1' ? 1 : 0}`);
    cmds.push(`single ${data.single === 'oneshot' ? 'oneshot' : data.single === '1' ? 1 : 0}`, `consume ${data.consume === '1' ? 1 : 0}`);
    if (data.volume >= 0) cmds.push(`setvol ${data.volume}`);
    if (data.song !== undefined && data.state !== 'stop') {
      // A playing snapshot goes on where it would be now; a paused one where it was.
      const later = data.state === 'play' ? (this.clock.now() - snapshot.takenAt) / 1000 : 0;
      cmds.push(`seek ${data.song} ${((data.elapsed ?? 0) + later).toFixed(3)}`);
      if (data.state === 'pause') cmds.push('pause 1');
    }
    await this.send(cmds);
    if (data.hubEntries?.length) {
      // The hub's own entries came back at their places: they are the hub's again (a stop deletes them).
      const ids = (await this.send('playlistinfo')).split(/\n(?=file: )/).map((e) => /^Id: (\d+)$/m.exec(e)?.[1]);
      for (const i of data.hubEntries) if (ids[i]) this.added.add(ids[i]!);
    }
  }
}
