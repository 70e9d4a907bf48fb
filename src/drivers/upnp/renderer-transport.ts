import type { Clock, TimerHandle } from '../../core/clock';
import type { Logger } from '../../logger';
import { redactUrl } from '../../redact';
import type { MediaRequest, SpeakerPlayState, SpeakerSnapshot, StopReason } from '../driver';
import type { UpnpConfig } from './config';
import { formatTime } from '../../protocols/upnp/didl';
import { didlLite } from './didl';
import { isActive, isIdle, isLoopbackHost, isLoopbackUrl, type Position, type RendererControl, type Transport } from './renderer-control';
import { SoapFault } from '../../protocols/upnp/soap-client';

/** A play in progress: created by load(), advanced by start() and confirm(). */
export interface PlayTicket {
  readonly gen: number;
  readonly media: MediaRequest;
  /** Clock ms when the play was asked for: a join's start position is reckoned from it. */
  readonly requestedAt: number;
  /** Clock ms Play was sent. */
  playAt?: number;
}

interface Session {
  media: MediaRequest;
  /** Seconds; from the hub, else from the renderer. */
  duration?: number;
  /** Last RelTime the renderer reported, and when. */
  position?: number;
  /** Clock ms the position last moved (or the session last (re)started). */
  lastAdvanceAt: number;
  /** false when the renderer reports no RelTime at all: stalls cannot be seen then. */
  reportsPosition: boolean;
  /** Someone else's playback, found on (re)connect: watched and reported, never stalled out. */
  foreign?: boolean;
}

/** Seconds from the end within which a renderer that stops counts as having finished the media. */
const END_MARGIN_S = 3;
const POLL_MS = 1000;
const CONFIRM_STEP_MS = 200;
const MAX_SEEKS = 3;
/** Renderers ignore a Seek sent before their pipeline runs (gmediarender does). */
const SEEK_SETTLE_MS = 300;

export class Replaced extends Error {
  constructor() {
    super('playback was replaced before it started');
  }
}

/** What the transport needs from its speaker. */
export interface TransportHost {
  isAvailable(): boolean;
  currentState(): SpeakerPlayState;
  /** The renderer's host (a loopback media URL only reaches a renderer on this machine). */
  address(): string;
  setState(state: SpeakerPlayState, reason?: StopReason, detail?: string): void;
  assertAvailable(): void;
}

export interface RendererTransportOptions {
  control: RendererControl;
  host: TransportHost;
  config: UpnpConfig;
  clock: Clock;
  log: Logger;
  /** Recognises this hub's media URLs (see UpnpDriverOptions.isHubMediaUrl). */
  isHubMediaUrl?: (url: string) => boolean;
}

/**
 * A renderer's AVTransport as a playback: the three steps of a play (load, start, confirm —
 * a group sends each step to all its renderers at once), pause/resume/stop, the session a
 * play opens, watched by polling GetTransportInfo/GetPositionInfo every second (position is
 * never evented, and an evented PLAYING proves nothing: gmediarender says PLAYING for a URL
 * that answers 404 and keeps its position at 0), and the end, stall and ghost-playback rules.
 */
export class RendererTransport {
  private session?: Session;
  /** Bumped by every play and stop: a play still starting sees it was replaced. */
  private gen = 0;
  /** Bumped by every control action: a poll that started before one discards what it read. */
  private epoch = 0;
  private pollTimer?: TimerHandle;
  private polling = false;
  private closed = false;
  /**
   * An idle event came while a play was still confirming (no session yet, so it started no
   * look): the session's first poll goes at once, not a second later. A short clip that ends
   * just as its start is confirmed (an announcement) is then reported ended at once.
   */
  private lookSoon = false;

  constructor(private readonly opts: RendererTransportOptions) {}

  /** True while media is loaded (playing or paused). */
  get busy(): boolean {
    return this.session !== undefined;
  }

  position(): number | undefined {
    return this.session?.position;
  }

  /** First step of a play: SetAVTransportURI (RendererControl.setUri: a Stop first unless the renderer is known to be idle). */
  async load(media: MediaRequest): Promise<PlayTicket> {
    const { host, control, clock, log } = this.opts;
    host.assertAvailable();
    const ticket: PlayTicket = { gen: ++this.gen, media, requestedAt: clock.now() };
    this.epoch++;
    this.endSession();
    this.lookSoon = false;
    if (host.currentState() !== 'stopped') host.setState('stopped', 'stopped');
    log.debug({ url: redactUrl(media.url), contentType: media.contentType }, 'loading media');
    if (isLoopbackUrl(media.url) && !isLoopbackHost(host.address())) {
      // Only a renderer on the hub's own machine can fetch that; the play will most likely time out.
      log.warn(
        { url: redactUrl(media.url) },
        'the media URL points at loopback, which a networked renderer cannot reach: set network.interface (or mediaServer.host / advertiseHost)',
      );
    }
    await control.serial(async () => {
      this.check(ticket);
      await control.setUri(media.url, didlLite(media), () => this.check(ticket));
    });
    return ticket;
  }

  /** Second step: Play. In a group this goes out to every renderer at once. */
  async start(ticket: PlayTicket): Promise<void> {
    await this.opts.control.serial(async () => {
      this.check(ticket);
      await this.opts.control.avt('Play', { Speed: '1' });
    });
    ticket.playAt = this.opts.clock.now();
  }

  /**
   * Last step: resolves once the renderer reports PLAYING and its position has moved on (or,
   * for a renderer that reports no position at all, on PLAYING alone). Seeks first when the
   * play starts into the media. Rejects, and stops the renderer, when that does not happen
   * within playTimeoutSeconds.
   */
  async confirm(ticket: PlayTicket): Promise<void> {
    const { clock, config, control, log, host } = this.opts;
    const deadline = clock.now() + config.playTimeoutSeconds * 1000;
    const startAt = ticket.media.startAt ?? 0;
    let sawPlaying = false;
    let seeking = startAt > 0;
    let seeks = 0;
    let seekTarget = 0;
    let seekAt = 0;
    let prev: number | undefined;
    let last: Position = {};
    let reportsPosition = true;
    try {
      for (;;) {
        this.check(ticket);
        const transport = await control.readTransport();
        this.check(ticket);
        if (transport.state === 'PLAYING') sawPlaying = true;
        else if (sawPlaying && isIdle(transport.state)) {
          // Very short media (a one-word announcement) can finish before its position is seen moving.
          const duration = ticket.media.duration ?? last.duration;
          if (duration !== undefined && (last.rel ?? 0) >= duration - END_MARGIN_S && transport.status !== 'ERROR_OCCURRED') break;
          throw new Error(`the renderer stopped instead of playing (TransportStatus ${transport.status || 'unknown'})`);
        }
        if (sawPlaying) {
          const pos = await control.readPosition();
          this.check(ticket);
          last = pos;
          if (pos.rel === undefined) {
            reportsPosition = false;
            break; // cannot tell: PLAYING is all this renderer can say
          }
          if (seeking) {
            const now = clock.now();
            if (seekAt !== 0 && pos.rel >= seekTarget - 1) {
              seeking = false; // there: from here on it must advance like any play
              prev = pos.rel;
            } else if (seekAt === 0 ? now - (ticket.playAt ?? now) >= SEEK_SETTLE_MS : now - seekAt > 1500) {
              if (seeks >= MAX_SEEKS) {
                log.warn({ startAt }, 'the renderer would not seek; it plays from the start');
                seeking = false;
              } else {
                // Where the others are by now, not where they were when the play was asked for.
                seekTarget = startAt + (now - ticket.requestedAt) / 1000;
                seeks++;
                seekAt = now;
                await control
                  .serial(async () => {
                    this.check(ticket);
                    await control.avt('Seek', { Unit: 'REL_TIME', Target: formatTime(seekTarget) });
                  })
                  .catch((e) => {
                    if (!(e instanceof SoapFault)) throw e;
                    log.debug({ err: e.message }, 'seek refused; trying again');
                  });
              }
            }
          } else if (prev !== undefined && pos.rel > prev) {
            break; // the position moves: it really plays
          } else {
            prev = pos.rel;
          }
        }
        if (clock.now() > deadline) {
          throw new Error(
            sawPlaying
              ? `the renderer says PLAYING but its position does not advance (stuck at ${last.rel ?? '?'} s): it could not play the media`
              : `the renderer did not start playing within ${config.playTimeoutSeconds} s (TransportState ${transport.state || 'unknown'})`,
          );
        }
        await this.sleep(CONFIRM_STEP_MS);
      }
    } catch (e) {
      if (!(e instanceof Replaced) && ticket.gen === this.gen && host.isAvailable()) {
        // Leave nothing half-started behind: the hub counts this renderer out of the playback.
        await control.serial(() => control.avt('Stop')).catch(() => undefined);
      }
      throw e;
    }
    const now = clock.now();
    this.session = {
      media: ticket.media,
      duration: ticket.media.duration ?? (last.duration || undefined),
      position: last.rel,
      lastAdvanceAt: now,
      reportsPosition,
    };
    log.info({ url: redactUrl(ticket.media.url), startAt: startAt || undefined, ms: now - ticket.requestedAt }, 'renderer playing');
    host.setState('playing');
    this.schedulePoll(this.lookSoon ? 0 : POLL_MS);
    this.lookSoon = false;
  }

  async pause(): Promise<void> {
    const { host, control } = this.opts;
    host.assertAvailable();
    if (host.currentState() !== 'playing' || !this.session) return;
    this.epoch++;
    await control.serial(() => control.avt('Pause'));
    host.setState('paused');
  }

  async resume(): Promise<void> {
    const { host, control, clock, config } = this.opts;
    host.assertAvailable();
    const session = this.session;
    if (host.currentState() !== 'paused' || !session) return;
    this.epoch++;
    const gen = this.gen;
    await control.serial(() => control.avt('Play', { Speed: '1' }));
    const deadline = clock.now() + config.playTimeoutSeconds * 1000;
    for (;;) {
      if (gen !== this.gen || this.session !== session) throw new Replaced();
      const t = await control.readTransport();
      if (t.state === 'PLAYING') break;
      if (clock.now() > deadline) throw new Error(`the renderer did not resume (TransportState ${t.state})`);
      await this.sleep(CONFIRM_STEP_MS);
    }
    session.lastAdvanceAt = clock.now();
    this.epoch++;
    // A poll may have seen PLAYING first and said so already.
    if (host.currentState() !== 'playing') host.setState('playing');
  }

  async stop(): Promise<void> {
    const { host, control } = this.opts;
    this.gen++;
    this.epoch++;
    const wasActive = host.currentState() !== 'stopped';
    this.endSession();
    if (wasActive) host.setState('stopped', 'stopped');
    if (!host.isAvailable()) return;
    await control
      .serial(() => control.avt('Stop'))
      .catch((e) => {
        if (e instanceof SoapFault) return; // nothing loaded: stopped is stopped
        throw e;
      });
  }

  /**
   * Loads a snapshot's media again (another app's URI with its own metadata), played from the
   * position it had, or paused there. The media stays the other app's: no session of the hub's.
   */
  async restoreMedia(snap: SpeakerSnapshot & { url: string }): Promise<void> {
    const { host, control, clock, config, log } = this.opts;
    this.gen++;
    this.epoch++;
    const gen = this.gen;
    this.endSession();
    if (host.currentState() !== 'stopped') host.setState('stopped', 'stopped');
    const url = snap.url;
    await control.serial(async () => {
      if (snap.state === 'stopped') {
        // No Play follows: a renderer still playing (gmediarender switches streams on a new
        // URI while it plays) would play the restored media instead of holding it stopped.
        await control.avt('Stop').catch((e) => {
          if (!(e instanceof SoapFault)) throw e;
        });
        await control.avt('SetAVTransportURI', { CurrentURI: url, CurrentURIMetaData: snap.metadata ?? '' });
        return;
      }
      await control.setUri(url, snap.metadata ?? '', () => undefined);
      await control.avt('Play', { Speed: '1' });
    });
    if (snap.state === 'stopped') return;
    // Renderers refuse a seek before they play; a live stream (no duration) has nothing to seek.
    const deadline = clock.now() + config.playTimeoutSeconds * 1000;
    for (;;) {
      if (gen !== this.gen) return;
      const t = await control.readTransport();
      if (t.state === 'PLAYING') break;
      if (clock.now() > deadline) throw new Error(`the renderer did not play the restored media (TransportState ${t.state})`);
      await this.sleep(CONFIRM_STEP_MS);
    }
    if (snap.position !== undefined && snap.position >= 1 && snap.duration) {
      await control
        .serial(() => control.avt('Seek', { Unit: 'REL_TIME', Target: formatTime(snap.position!) }))
        .catch((e) => {
          if (!(e instanceof SoapFault)) throw e;
          log.debug({ err: e.message }, 'the renderer refused to seek the restored media');
        });
    }
    if (snap.state === 'paused' && gen === this.gen) await control.serial(() => control.avt('Pause'));
    // Reported and watched like playback found on connect (reconcile), so IsPlaying says it and stop_play reaches it.
    if (gen === this.gen && !this.session) {
      this.session = { media: { url }, lastAdvanceAt: clock.now(), reportsPosition: false, foreign: true };
      host.setState(snap.state === 'paused' ? 'paused' : 'playing');
      this.schedulePoll(POLL_MS);
    }
    log.info({ url: redactUrl(url), position: snap.position, state: snap.state }, 'restored what the renderer played before');
  }

  /**
   * Ghost playback: a renderer dropped from a playback (it hung, the network split) or left
   * playing when the hub crashed plays on unseen. On discovery and reconnect the renderer's
   * transport is read: hub media that no playback tracks (no session here) is stopped;
   * anything else (another app's stream) is reported as it is (state playing or paused, so
   * IsPlaying is true and stop_play reaches it) and watched until it ends.
   */
  async reconcile(): Promise<void> {
    const { control, log, clock, host } = this.opts;
    if (this.session || this.closed) return;
    let transport: Transport;
    try {
      transport = await control.readTransport();
    } catch (e) {
      log.debug({ err: (e as Error).message }, 'transport state not readable on connect');
      return;
    }
    if (!isActive(transport.state)) return;
    const uri = await control.currentUri();
    if (uri && this.opts.isHubMediaUrl?.(uri)) {
      log.warn(
        { url: redactUrl(uri), transportState: transport.state },
        'the renderer plays hub media that no playback tracks (a dropped speaker or a hub restart): stopping it',
      );
      await control.serial(() => control.avt('Stop')).catch((e) => log.warn({ err: (e as Error).message }, 'could not stop the left-over playback'));
      return;
    }
    log.info(
      { url: uri ? redactUrl(uri) : undefined, transportState: transport.state },
      'the renderer is playing something the hub did not start: reported as playing',
    );
    this.session = { media: { url: uri }, lastAdvanceAt: clock.now(), reportsPosition: false, foreign: true };
    host.setState(transport.state === 'PAUSED_PLAYBACK' ? 'paused' : 'playing');
    this.schedulePoll(POLL_MS);
  }

  /** An AVTransport event: only a prompt to look (events may be stale or out of order). */
  onEvent(vars: Record<string, string>): void {
    if (!vars.TransportState) return;
    if (this.session) this.schedulePoll(0);
    else if (isIdle(vars.TransportState.toUpperCase())) this.lookSoon = true;
  }

  /** The renderer restarted (a new address or boot id): whatever it played is gone. */
  restarted(): void {
    if (!this.session) return;
    this.gen++;
    this.endSession();
    this.opts.host.setState('stopped', 'error', 'the renderer restarted');
  }

  /** The renderer is unreachable: a play still starting fails, a running one ends with an error. */
  lost(reason: string): void {
    const { host } = this.opts;
    this.gen++;
    this.epoch++;
    const wasActive = host.currentState() !== 'stopped';
    this.endSession();
    if (wasActive) host.setState('stopped', 'error', `renderer unavailable: ${reason}`);
  }

  /** Back after close() (a reconnect). */
  reopen(): void {
    this.closed = false;
  }

  /** Hub shutdown: no more polling. */
  close(): void {
    this.closed = true;
    this.gen++;
    this.endSession();
  }

  // ---- polling -------------------------------------------------------------------------

  private schedulePoll(ms: number): void {
    if (!this.session || this.closed) return;
    this.pollTimer?.cancel();
    this.pollTimer = this.opts.clock.setTimer(() => void this.poll(), ms);
  }

  /** One look at the renderer while a session runs: position, transport state, end, stall. */
  private async poll(): Promise<void> {
    const { host, control, clock, config, log } = this.opts;
    const session = this.session;
    if (!session || this.polling || !host.isAvailable()) return;
    this.polling = true;
    const epoch = this.epoch;
    try {
      const [pos, transport] = await Promise.all([control.readPosition(), control.readTransport()]);
      if (epoch !== this.epoch || session !== this.session) return;
      const now = clock.now();
      if (pos.rel !== undefined) {
        if (session.position === undefined || pos.rel > session.position) session.lastAdvanceAt = now;
        session.position = pos.rel;
      }
      if (pos.duration && session.duration === undefined) session.duration = pos.duration;
      switch (transport.state) {
        case 'STOPPED':
        case 'NO_MEDIA_PRESENT':
          this.finished(transport);
          return;
        case 'PAUSED_PLAYBACK':
          // Paused from elsewhere (the renderer's own remote, another app).
          if (host.currentState() === 'playing') host.setState('paused');
          session.lastAdvanceAt = now;
          break;
        default:
          if (transport.state === 'PLAYING' && host.currentState() === 'paused') host.setState('playing');
          if (session.reportsPosition && now - session.lastAdvanceAt > config.stallSeconds * 1000) {
            this.stalled(session);
            return;
          }
      }
    } catch (e) {
      if (!(e instanceof SoapFault)) log.debug({ err: (e as Error).message }, 'poll failed');
    } finally {
      this.polling = false;
    }
    this.schedulePoll(POLL_MS);
  }

  /** The renderer went idle by itself: the end of the media, an error, or someone else's Stop. */
  private finished(transport: Transport): void {
    const { host, log } = this.opts;
    const session = this.session;
    if (!session) return;
    this.endSession();
    const { position, duration } = session;
    if (transport.status === 'ERROR_OCCURRED') {
      host.setState('stopped', 'error', 'the renderer reported an error');
    } else if (duration === undefined || (position ?? 0) >= duration - END_MARGIN_S) {
      log.debug({ position, duration }, 'media ended');
      host.setState('stopped', 'ended');
    } else {
      host.setState('stopped', 'stopped', `stopped on the renderer at ${Math.floor(position ?? 0)} of ${Math.round(duration)} s`);
    }
  }

  private stalled(session: Session): void {
    const { host, control, config, log } = this.opts;
    this.endSession();
    const detail = `position stuck at ${session.position ?? '?'} s for ${config.stallSeconds} s`;
    log.warn({ position: session.position }, 'renderer stalled; stopping it');
    host.setState('stopped', 'error', detail);
    void control.serial(() => control.avt('Stop')).catch(() => undefined);
  }

  private endSession(): void {
    this.session = undefined;
    this.pollTimer?.cancel();
    this.pollTimer = undefined;
  }

  /** Throws when the play can no longer go on; unreachable first, since going away also replaces it. */
  private check(ticket: PlayTicket): void {
    this.opts.host.assertAvailable();
    if (ticket.gen !== this.gen) throw new Replaced();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.opts.clock.setTimer(resolve, ms));
  }
}
