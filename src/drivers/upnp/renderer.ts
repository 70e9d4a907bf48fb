import { EventEmitter } from 'node:events';
import type { Clock, TimerHandle } from '../../core/clock';
import type { Logger } from '../../logger';
import type {
  MediaRequest,
  Speaker,
  SpeakerCapabilities,
  SpeakerEvents,
  SpeakerInfo,
  SpeakerPlayState,
  SpeakerSnapshot,
  StopReason,
} from '../driver';
import type { UpnpConfig } from './config';
import { fetchDescription, fetchVolumeRange, type RendererDescription, type ServiceEndpoint } from './description';
import { didlLite, formatTime, parseTime } from './didl';
import { diffInfo, infoOf, upnpDeviceId } from './info';
import { GenaSubscription, parseLastChange, SubscribeError, type GenaServer } from './gena';
import { NetworkError } from './http';
import { redactUrl } from '../../redact';
import { SoapFault, soapCall, type SoapArgs } from './soap';
import { VolumeScale } from './volume';

export { upnpDeviceId };

/** What a renderer needs from its driver. */
export interface RendererContext {
  config: UpnpConfig;
  clock: Clock;
  logger: Logger;
  gena: GenaServer;
  /** The interface address requests are sent from, when one is configured. */
  localAddress?: string;
  /** Recognises this hub's media URLs (see UpnpDriverOptions.isHubMediaUrl). */
  isHubMediaUrl?: (url: string) => boolean;
}

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

interface Transport {
  state: string;
  status: string;
}

interface Position {
  rel?: number;
  duration?: number;
}

/** Seconds from the end within which a renderer that stops counts as having finished the media. */
const END_MARGIN_S = 3;
const POLL_MS = 1000;
const CONFIRM_STEP_MS = 200;
const MAX_SEEKS = 3;
/** An SSDP announcement's datagrams (one per device type and service, sent twice) arrive within this. */
const ANNOUNCEMENT_BURST_MS = 3000;
/** Renderers ignore a Seek sent before their pipeline runs (gmediarender does). */
const SEEK_SETTLE_MS = 300;

class Replaced extends Error {
  constructor() {
    super('playback was replaced before it started');
  }
}

/**
 * One UPnP MediaRenderer as a hub speaker. Control goes through AVTransport and
 * RenderingControl SOAP actions; state comes from GENA events, checked by polling
 * GetTransportInfo/GetPositionInfo every second while a session runs (position is never
 * evented, and an evented PLAYING proves nothing: gmediarender says PLAYING for a URL that
 * answers 404 and keeps its position at 0).
 */
export class UpnpSpeaker extends EventEmitter<SpeakerEvents> implements Speaker {
  readonly driver = 'upnp';
  readonly id: string;
  readonly udn: string;
  private desc: RendererDescription;
  private readonly log: Logger;
  private _available = false;
  private _state: SpeakerPlayState = 'stopped';
  private _volume = 0;
  private volumeKnown = false;
  /** The last volume we set, so the renderer's echo of it reads back as what was asked. */
  private lastSet?: { hub: number; raw: number };
  private muted = false;
  private scale = new VolumeScale();
  private avt?: GenaSubscription;
  private rc?: GenaSubscription;
  private session?: Session;
  /** Bumped by every play and stop: a play still starting sees it was replaced. */
  private gen = 0;
  /** Bumped by every control action: a poll that started before one discards what it read. */
  private epoch = 0;
  private pollTimer?: TimerHandle;
  private polling = false;
  private control: Promise<unknown> = Promise.resolve();
  private verifying?: Promise<boolean>;
  private lastSubscriptionCheck = 0;
  /** The renderer's SSDP boot id, when it sends one: a new value means it restarted. */
  bootId?: string;
  private closed = false;

  constructor(
    description: RendererDescription,
    private readonly ctx: RendererContext,
  ) {
    super();
    this.desc = description;
    this.udn = description.udn;
    this.id = upnpDeviceId(description.udn);
    this.log = ctx.logger.child({ deviceId: this.id });
  }

  // ---- Speaker -------------------------------------------------------------------------

  get available(): boolean {
    return this._available;
  }
  get state(): SpeakerPlayState {
    return this._state;
  }
  get volume(): number {
    return this.muted ? 0 : this._volume;
  }
  get location(): string {
    return this.desc.location;
  }
  /** True while media is loaded (playing or paused). */
  get busy(): boolean {
    return this.session !== undefined;
  }

  info(): SpeakerInfo {
    return infoOf(this.desc);
  }

  async play(media: MediaRequest): Promise<void> {
    const ticket = await this.load(media);
    await this.start(ticket);
    await this.confirm(ticket);
  }

  /** First step of a play: Stop (always: many renderers refuse a new URI while playing), then SetAVTransportURI. */
  async load(media: MediaRequest): Promise<PlayTicket> {
    this.assertAvailable();
    const ticket: PlayTicket = { gen: ++this.gen, media, requestedAt: this.ctx.clock.now() };
    this.epoch++;
    this.endSession();
    if (this._state !== 'stopped') this.setState('stopped', 'stopped');
    this.log.debug({ url: redactUrl(media.url), contentType: media.contentType }, 'loading media');
    if (isLoopbackUrl(media.url) && !isLoopbackHost(this.desc.address)) {
      // Only a renderer on the hub's own machine can fetch that; the play will most likely time out.
      this.log.warn(
        { url: redactUrl(media.url) },
        'the media URL points at loopback, which a networked renderer cannot reach: set network.interface (or mediaServer.host / advertiseHost)',
      );
    }
    await this.serial(async () => {
      this.check(ticket);
      await this.avtCall('Stop').catch((e) => {
        // 701 "transition not available" when nothing is loaded: already stopped, which is all we want.
        if (!(e instanceof SoapFault)) throw e;
      });
      this.check(ticket);
      await this.avtCall('SetAVTransportURI', { CurrentURI: media.url, CurrentURIMetaData: didlLite(media) });
    });
    return ticket;
  }

  /** Second step: Play. In a group this goes out to every renderer at once. */
  async start(ticket: PlayTicket): Promise<void> {
    await this.serial(async () => {
      this.check(ticket);
      await this.avtCall('Play', { Speed: '1' });
    });
    ticket.playAt = this.ctx.clock.now();
  }

  /**
   * Last step: resolves once the renderer reports PLAYING and its position has moved on (or,
   * for a renderer that reports no position at all, on PLAYING alone). Seeks first when the
   * play starts into the media. Rejects, and stops the renderer, when that does not happen
   * within playTimeoutSeconds.
   */
  async confirm(ticket: PlayTicket): Promise<void> {
    const { clock, config } = this.ctx;
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
        const transport = await this.readTransport();
        this.check(ticket);
        if (transport.state === 'PLAYING') sawPlaying = true;
        else if (sawPlaying && isIdle(transport.state)) {
          // Very short media (a one-word announcement) can finish before its position is seen moving.
          const duration = ticket.media.duration ?? last.duration;
          if (duration !== undefined && (last.rel ?? 0) >= duration - END_MARGIN_S && transport.status !== 'ERROR_OCCURRED') break;
          throw new Error(`the renderer stopped instead of playing (TransportStatus ${transport.status || 'unknown'})`);
        }
        if (sawPlaying) {
          const pos = await this.readPosition();
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
                this.log.warn({ startAt }, 'the renderer would not seek; it plays from the start');
                seeking = false;
              } else {
                // Where the others are by now, not where they were when the play was asked for.
                seekTarget = startAt + (now - ticket.requestedAt) / 1000;
                seeks++;
                seekAt = now;
                await this.serial(async () => {
                  this.check(ticket);
                  await this.avtCall('Seek', { Unit: 'REL_TIME', Target: formatTime(seekTarget) });
                }).catch((e) => {
                  if (!(e instanceof SoapFault)) throw e;
                  this.log.debug({ err: e.message }, 'seek refused; trying again');
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
      if (!(e instanceof Replaced) && ticket.gen === this.gen && this._available) {
        // Leave nothing half-started behind: the hub counts this renderer out of the playback.
        await this.serial(() => this.avtCall('Stop')).catch(() => undefined);
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
    this.log.info({ url: redactUrl(ticket.media.url), startAt: startAt || undefined, ms: now - ticket.requestedAt }, 'renderer playing');
    this.setState('playing');
    this.schedulePoll(POLL_MS);
  }

  async pause(): Promise<void> {
    this.assertAvailable();
    if (this._state !== 'playing' || !this.session) return;
    this.epoch++;
    await this.serial(() => this.avtCall('Pause'));
    this.setState('paused');
  }

  async resume(): Promise<void> {
    this.assertAvailable();
    const session = this.session;
    if (this._state !== 'paused' || !session) return;
    this.epoch++;
    const gen = this.gen;
    await this.serial(() => this.avtCall('Play', { Speed: '1' }));
    const deadline = this.ctx.clock.now() + this.ctx.config.playTimeoutSeconds * 1000;
    for (;;) {
      if (gen !== this.gen || this.session !== session) throw new Replaced();
      const t = await this.readTransport();
      if (t.state === 'PLAYING') break;
      if (this.ctx.clock.now() > deadline) throw new Error(`the renderer did not resume (TransportState ${t.state})`);
      await this.sleep(CONFIRM_STEP_MS);
    }
    session.lastAdvanceAt = this.ctx.clock.now();
    this.epoch++;
    // A poll may have seen PLAYING first and said so already.
    if ((this._state as SpeakerPlayState) !== 'playing') this.setState('playing');
  }

  async stop(): Promise<void> {
    this.gen++;
    this.epoch++;
    const wasActive = this._state !== 'stopped';
    this.endSession();
    if (wasActive) this.setState('stopped', 'stopped');
    if (!this._available) return;
    await this.serial(() => this.avtCall('Stop')).catch((e) => {
      if (e instanceof SoapFault) return; // nothing loaded: stopped is stopped
      throw e;
    });
  }

  position(): number | undefined {
    return this.session?.position;
  }

  async setVolume(volume: number): Promise<void> {
    this.assertAvailable();
    const rc = this.desc.renderingControl;
    if (!rc) throw new Error('the renderer has no RenderingControl service');
    const v = Math.max(0, Math.min(50, Math.round(volume)));
    const target = this.scale.toRenderer(v);
    await this.call(rc, 'SetVolume', { InstanceID: 0, Channel: 'Master', DesiredVolume: target });
    this.lastSet = { hub: v, raw: target };
    // A volume above 0 is meant to be heard: lift a mute set elsewhere (the hub's own mute is volume 0).
    if (this.muted && v > 0) {
      await this.call(rc, 'SetMute', { InstanceID: 0, Channel: 'Master', DesiredMute: 0 }).catch((e) => {
        if (!(e instanceof SoapFault)) throw e;
      });
      this.muted = false;
    }
    this.applyVolume(v);
  }

  // ---- overlays: mute, snapshot and restore (announcements) ------------------------------

  readonly capabilities: SpeakerCapabilities = { mute: true, snapshot: true, seek: true, syncGroup: false };

  isMuted(): boolean {
    return this.muted;
  }

  async setMute(muted: boolean): Promise<void> {
    this.assertAvailable();
    const rc = this.desc.renderingControl;
    if (!rc) throw new Error('the renderer has no RenderingControl service');
    await this.call(rc, 'SetMute', { InstanceID: 0, Channel: 'Master', DesiredMute: muted ? 1 : 0 });
    const before = this.volume;
    this.muted = muted;
    if (this.volume !== before) this.emit('volume', this.volume);
  }

  /**
   * What the renderer has now, read from it (GetMediaInfo, GetPositionInfo, GetTransportInfo,
   * GetVolume, GetMute), whoever loaded it: another control point's URI and metadata too.
   */
  async snapshot(): Promise<SpeakerSnapshot> {
    this.assertAvailable();
    const media = await this.avtCall('GetMediaInfo');
    const pos = await this.avtCall('GetPositionInfo');
    const transport = await this.readTransport();
    let raw: number | undefined;
    let muted = this.muted;
    const rc = this.desc.renderingControl;
    if (rc) {
      const v = await this.call(rc, 'GetVolume', { InstanceID: 0, Channel: 'Master' }).catch(() => undefined);
      if (v && v.CurrentVolume !== undefined && Number.isFinite(Number(v.CurrentVolume))) raw = Number(v.CurrentVolume);
      const m = await this.call(rc, 'GetMute', { InstanceID: 0, Channel: 'Master' }).catch(() => undefined);
      if (m?.CurrentMute !== undefined) muted = m.CurrentMute === '1' || m.CurrentMute.toLowerCase() === 'true';
    }
    const state: SpeakerPlayState =
      transport.state === 'PLAYING' || transport.state === 'TRANSITIONING' ? 'playing' : transport.state === 'PAUSED_PLAYBACK' ? 'paused' : 'stopped';
    const url = media.CurrentURI || pos.TrackURI || undefined;
    return {
      state,
      url,
      metadata: media.CurrentURIMetaData && media.CurrentURIMetaData !== 'NOT_IMPLEMENTED' ? media.CurrentURIMetaData : undefined,
      position: parseTime(pos.RelTime),
      duration: parseTime(pos.TrackDuration) || undefined,
      volume: raw !== undefined ? this.scale.toHub(raw) : this._volume,
      muted,
      takenAt: this.ctx.clock.now(),
      driver: { rawVolume: raw },
    };
  }

  /**
   * Puts a snapshot back: the renderer's own volume level and mute, then (unless volumeOnly)
   * its URI with the original metadata, played from the position it had, or paused there.
   * The media stays the other app's: the hub keeps no playback of its own on it.
   */
  async restore(snap: SpeakerSnapshot, options: { volumeOnly?: boolean } = {}): Promise<void> {
    this.assertAvailable();
    const rc = this.desc.renderingControl;
    if (rc) {
      const raw = (snap.driver as { rawVolume?: number } | undefined)?.rawVolume ?? this.scale.toRenderer(snap.volume);
      await this.call(rc, 'SetVolume', { InstanceID: 0, Channel: 'Master', DesiredVolume: raw });
      this.lastSet = { hub: snap.volume, raw };
      await this.call(rc, 'SetMute', { InstanceID: 0, Channel: 'Master', DesiredMute: snap.muted ? 1 : 0 }).catch((e) => {
        if (!(e instanceof SoapFault)) throw e;
      });
      this.muted = !!snap.muted;
      this.applyVolume(snap.volume);
    }
    if (options.volumeOnly || !snap.url) return;
    this.gen++;
    this.epoch++;
    const gen = this.gen;
    this.endSession();
    if (this._state !== 'stopped') this.setState('stopped', 'stopped');
    const url = snap.url;
    await this.serial(async () => {
      await this.avtCall('Stop').catch((e) => {
        if (!(e instanceof SoapFault)) throw e;
      });
      await this.avtCall('SetAVTransportURI', { CurrentURI: url, CurrentURIMetaData: snap.metadata ?? '' });
      if (snap.state !== 'stopped') await this.avtCall('Play', { Speed: '1' });
    });
    if (snap.state === 'stopped') return;
    // Renderers refuse a seek before they play; a live stream (no duration) has nothing to seek.
    const deadline = this.ctx.clock.now() + this.ctx.config.playTimeoutSeconds * 1000;
    for (;;) {
      if (gen !== this.gen) return;
      const t = await this.readTransport();
      if (t.state === 'PLAYING') break;
      if (this.ctx.clock.now() > deadline) throw new Error(`the renderer did not play the restored media (TransportState ${t.state})`);
      await this.sleep(CONFIRM_STEP_MS);
    }
    if (snap.position !== undefined && snap.position >= 1 && snap.duration) {
      await this.serial(() => this.avtCall('Seek', { Unit: 'REL_TIME', Target: formatTime(snap.position!) })).catch((e) => {
        if (!(e instanceof SoapFault)) throw e;
        this.log.debug({ err: e.message }, 'the renderer refused to seek the restored media');
      });
    }
    if (snap.state === 'paused' && gen === this.gen) await this.serial(() => this.avtCall('Pause'));
    this.log.info({ url: redactUrl(url), position: snap.position, state: snap.state }, 'restored what the renderer played before');
  }

  // ---- driver side ---------------------------------------------------------------------

  /**
   * (Re)attaches to the renderer at this description: subscribes to its events, reads its
   * volume and transport state, and makes the speaker available. Throws when the renderer
   * does not answer.
   */
  async connect(description: RendererDescription, callbackHost: string): Promise<void> {
    const before = infoOf(this.desc);
    const moved = description.location !== this.desc.location;
    const wasAvailable = this._available;
    this.desc = description;
    this.closed = false;
    await Promise.all([this.avt?.close(!moved && this._available), this.rc?.close(!moved && this._available)]);
    this.avt = this.subscription(description.avTransport, callbackHost, (p) => this.onTransportEvent(p));
    this.rc = description.renderingControl
      ? this.subscription(description.renderingControl, callbackHost, (p) => this.onRenderingEvent(p))
      : undefined;
    await Promise.all([this.subscribe(this.avt), this.rc && this.subscribe(this.rc)]);
    if (description.renderingControl) {
      const range = await fetchVolumeRange(description.renderingControl.scpdUrl, this.requestOptions());
      if (range) this.scale = new VolumeScale(range);
      const r = await this.call(description.renderingControl, 'GetVolume', { InstanceID: 0, Channel: 'Master' }).catch((e) => {
        if (e instanceof SoapFault) return undefined;
        throw e;
      });
      const current = Number(r?.CurrentVolume);
      if (r && Number.isFinite(current)) this.onRendererVolume(current);
    }
    if (moved && this.session) {
      // A renderer at a new address has restarted: whatever it played is gone.
      this.endSession();
      this.setState('stopped', 'error', 'the renderer restarted');
    }
    // Found or back after a gap: whatever it plays now, the hub did not see start.
    if (!wasAvailable && !this.session && !this.closed) await this.reconcileTransport();
    const after = infoOf(description);
    if (moved) this.log.info({ location: description.location }, 'renderer moved; reconnected at its new address');
    const changed = diffInfo(before, after);
    if (Object.keys(changed).length) this.emit('info', changed);
    if (!this._available) {
      this._available = true;
      this.log.info({ name: after.name, address: `${after.ipAddress}:${after.port}` }, 'renderer available');
      this.emit('availability', true);
    }
  }

  /**
   * Ghost playback: a renderer dropped from a playback (it hung, the network split) or left
   * playing when the hub crashed plays on unseen. On discovery and reconnect the renderer's
   * transport is read: hub media that no playback tracks (this speaker has no session) is
   * stopped; anything else (another app's stream) is reported as it is (state playing or
   * paused, so IsPlaying is true and stop_play reaches it) and watched until it ends.
   */
  private async reconcileTransport(): Promise<void> {
    let transport: Transport;
    try {
      transport = await this.readTransport();
    } catch (e) {
      this.log.debug({ err: (e as Error).message }, 'transport state not readable on connect');
      return;
    }
    if (!isActive(transport.state)) return;
    const uri = await this.currentUri();
    if (uri && this.ctx.isHubMediaUrl?.(uri)) {
      this.log.warn(
        { url: redactUrl(uri), transportState: transport.state },
        'the renderer plays hub media that no playback tracks (a dropped speaker or a hub restart): stopping it',
      );
      await this.serial(() => this.avtCall('Stop')).catch((e) =>
        this.log.warn({ err: (e as Error).message }, 'could not stop the left-over playback'),
      );
      return;
    }
    this.log.info(
      { url: uri ? redactUrl(uri) : undefined, transportState: transport.state },
      'the renderer is playing something the hub did not start: reported as playing',
    );
    this.session = { media: { url: uri }, lastAdvanceAt: this.ctx.clock.now(), reportsPosition: false, foreign: true };
    this.setState(transport.state === 'PAUSED_PLAYBACK' ? 'paused' : 'playing');
    this.schedulePoll(POLL_MS);
  }

  /** The URI the renderer has loaded: GetMediaInfo's CurrentURI, else GetPositionInfo's TrackURI. */
  private async currentUri(): Promise<string> {
    const media = await this.avtCall('GetMediaInfo').catch(() => undefined);
    if (media?.CurrentURI) return media.CurrentURI;
    const pos = await this.avtCall('GetPositionInfo').catch(() => undefined);
    return pos?.TrackURI ?? '';
  }

  /**
   * The renderer said it is gone (byebye), stopped answering, or its announcement expired:
   * it leaves the playback with an error, and comes back through connect().
   */
  markUnavailable(reason: string): void {
    if (!this._available) return;
    this._available = false;
    this.gen++;
    this.epoch++;
    void this.avt?.close(false);
    void this.rc?.close(false);
    this.avt = undefined;
    this.rc = undefined;
    const wasActive = this._state !== 'stopped';
    this.endSession();
    this.log.warn({ reason }, 'renderer unavailable');
    if (wasActive) this.setState('stopped', 'error', `renderer unavailable: ${reason}`);
    this.emit('availability', false);
  }

  /** Checks the renderer still answers (its description); marks it unavailable if not. */
  verify(reason = 'it does not answer'): Promise<boolean> {
    if (!this._available) return Promise.resolve(false);
    this.verifying ??= (async () => {
      try {
        const { description } = await fetchDescription(this.desc.location, {
          ...this.requestOptions(),
          timeoutMs: Math.min(this.ctx.config.requestTimeoutMs, 2500),
        });
        if (description.udn === this.udn) return true;
        this.markUnavailable('another device answers at its address');
        return false;
      } catch (e) {
        this.markUnavailable(`${reason} (${(e as Error).message})`);
        return false;
      } finally {
        this.verifying = undefined;
      }
    })();
    return this.verifying;
  }

  /**
   * Renews both subscriptions now: after a restart the renderer has forgotten our SIDs,
   * answers 412, and gets fresh subscriptions. Called when it re-announces itself; one
   * announcement is a burst of datagrams, hence the short hold-off (skipped when its boot
   * id says it restarted).
   */
  checkSubscriptions(rebooted = false): void {
    const now = this.ctx.clock.now();
    if (!this._available || (!rebooted && now - this.lastSubscriptionCheck < ANNOUNCEMENT_BURST_MS)) return;
    this.lastSubscriptionCheck = now;
    if (rebooted && this.session) {
      // Whatever it played died with the old process.
      this.gen++;
      this.endSession();
      this.setState('stopped', 'error', 'the renderer restarted');
    }
    void this.avt?.renew();
    void this.rc?.renew();
  }

  /** Hub shutdown: stop polling and unsubscribe. The core has already stopped playback. */
  async close(): Promise<void> {
    this.closed = true;
    this.gen++;
    this.endSession();
    await Promise.all([this.avt?.close(this._available), this.rc?.close(this._available)]);
    this.avt = undefined;
    this.rc = undefined;
  }

  // ---- events and polling --------------------------------------------------------------

  private onTransportEvent(properties: Record<string, string>): void {
    const vars = lastChangeOf(properties);
    if (!vars) return;
    // Events only prompt a look: they may be stale (our own Stop before a play) or out of order.
    if (vars.TransportState && this.session) this.schedulePoll(0);
  }

  private onRenderingEvent(properties: Record<string, string>): void {
    const vars = lastChangeOf(properties);
    if (!vars) return;
    if (vars.Mute !== undefined) {
      const muted = vars.Mute === '1' || vars.Mute.toLowerCase() === 'true';
      if (muted !== this.muted) {
        const before = this.volume;
        this.muted = muted;
        if (this.volume !== before) this.emit('volume', this.volume);
      }
    }
    if (vars.Volume !== undefined && Number.isFinite(Number(vars.Volume))) this.onRendererVolume(Number(vars.Volume));
  }

  private onRendererVolume(raw: number): void {
    this.applyVolume(this.lastSet?.raw === raw ? this.lastSet.hub : this.scale.toHub(raw));
  }

  private applyVolume(v: number): void {
    const before = this.volume;
    this._volume = v;
    const first = !this.volumeKnown;
    this.volumeKnown = true;
    if (!first && this.volume !== before) this.emit('volume', this.volume);
  }

  private schedulePoll(ms: number): void {
    if (!this.session || this.closed) return;
    this.pollTimer?.cancel();
    this.pollTimer = this.ctx.clock.setTimer(() => void this.poll(), ms);
  }

  /** One look at the renderer while a session runs: position, transport state, end, stall. */
  private async poll(): Promise<void> {
    const session = this.session;
    if (!session || this.polling || !this._available) return;
    this.polling = true;
    const epoch = this.epoch;
    try {
      const [pos, transport] = await Promise.all([this.readPosition(), this.readTransport()]);
      if (epoch !== this.epoch || session !== this.session) return;
      const now = this.ctx.clock.now();
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
          if (this._state === 'playing') this.setState('paused');
          session.lastAdvanceAt = now;
          break;
        default:
          if (transport.state === 'PLAYING' && this._state === 'paused') this.setState('playing');
          if (session.reportsPosition && now - session.lastAdvanceAt > this.ctx.config.stallSeconds * 1000) {
            this.stalled(session);
            return;
          }
      }
    } catch (e) {
      if (!(e instanceof SoapFault)) this.log.debug({ err: (e as Error).message }, 'poll failed');
    } finally {
      this.polling = false;
    }
    this.schedulePoll(POLL_MS);
  }

  /** The renderer went idle by itself: the end of the media, an error, or someone else's Stop. */
  private finished(transport: Transport): void {
    const session = this.session;
    if (!session) return;
    this.endSession();
    const { position, duration } = session;
    if (transport.status === 'ERROR_OCCURRED') {
      this.setState('stopped', 'error', 'the renderer reported an error');
    } else if (duration === undefined || (position ?? 0) >= duration - END_MARGIN_S) {
      this.log.debug({ position, duration }, 'media ended');
      this.setState('stopped', 'ended');
    } else {
      this.setState('stopped', 'stopped', `stopped on the renderer at ${Math.floor(position ?? 0)} of ${Math.round(duration)} s`);
    }
  }

  private stalled(session: Session): void {
    this.endSession();
    const detail = `position stuck at ${session.position ?? '?'} s for ${this.ctx.config.stallSeconds} s`;
    this.log.warn({ position: session.position }, 'renderer stalled; stopping it');
    this.setState('stopped', 'error', detail);
    void this.serial(() => this.avtCall('Stop')).catch(() => undefined);
  }

  private endSession(): void {
    this.session = undefined;
    this.pollTimer?.cancel();
    this.pollTimer = undefined;
  }

  // ---- plumbing ------------------------------------------------------------------------

  private async readTransport(): Promise<Transport> {
    const r = await this.avtCall('GetTransportInfo');
    return { state: (r.CurrentTransportState ?? '').toUpperCase(), status: (r.CurrentTransportStatus ?? '').toUpperCase() };
  }

  private async readPosition(): Promise<Position> {
    const r = await this.avtCall('GetPositionInfo');
    const duration = parseTime(r.TrackDuration);
    return { rel: parseTime(r.RelTime), duration: duration ? duration : undefined };
  }

  private avtCall(action: string, args: SoapArgs = {}): Promise<Record<string, string>> {
    return this.call(this.desc.avTransport, action, { InstanceID: 0, ...args });
  }

  /** A SOAP call; a renderer that does not answer is checked, and marked unavailable if gone. */
  private async call(service: ServiceEndpoint, action: string, args: SoapArgs): Promise<Record<string, string>> {
    try {
      return await soapCall(service, action, args, this.requestOptions());
    } catch (e) {
      if (e instanceof NetworkError) {
        this.log.debug({ action, err: e.message }, 'control request failed');
        void this.verify(`${action} failed`);
        throw new Error(`the renderer did not answer ${action}: ${e.message}`);
      }
      throw e;
    }
  }

  private subscription(service: ServiceEndpoint, callbackHost: string, onEvent: (p: Record<string, string>) => void): GenaSubscription {
    return new GenaSubscription({
      server: this.ctx.gena,
      eventSubUrl: service.eventSubUrl,
      callbackHost,
      timeoutSeconds: this.ctx.config.subscriptionSeconds,
      requestTimeoutMs: this.ctx.config.requestTimeoutMs,
      localAddress: this.ctx.localAddress,
      clock: this.ctx.clock,
      logger: this.log,
      onEvent,
      onLost: (e) => void this.verify(`event subscription renewal failed: ${e.message}`),
    });
  }

  /** Eventing is a convenience (polling sees everything that matters): a refusal is logged, not fatal. */
  private async subscribe(sub: GenaSubscription): Promise<void> {
    try {
      await sub.subscribe();
    } catch (e) {
      if (!(e instanceof SubscribeError)) throw e;
      this.log.warn({ err: e.message }, 'the renderer refused an event subscription; relying on polling meanwhile');
      sub.retryLater();
    }
  }

  private requestOptions(): { timeoutMs: number; localAddress?: string } {
    return { timeoutMs: this.ctx.config.requestTimeoutMs, localAddress: this.ctx.localAddress };
  }

  /** Runs control actions one after another, so a Stop never overtakes the Play it cancels. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.control.then(fn, fn);
    this.control = run.catch(() => undefined);
    return run;
  }

  /** Throws when the play can no longer go on; unreachable first, since going away also replaces it. */
  private check(ticket: PlayTicket): void {
    this.assertAvailable();
    if (ticket.gen !== this.gen) throw new Replaced();
  }

  private assertAvailable(): void {
    if (!this._available) throw new Error('the renderer is not reachable');
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.ctx.clock.setTimer(resolve, ms));
  }

  private setState(state: SpeakerPlayState, reason?: StopReason, detail?: string): void {
    this._state = state;
    this.emit('state', state, reason, detail);
  }
}

function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}

function isLoopbackUrl(url: string): boolean {
  try {
    return isLoopbackHost(new URL(url).hostname.replace(/^\[|\]$/g, ''));
  } catch {
    return false;
  }
}

/** Media loaded and in use: playing, paused, or on its way (TRANSITIONING, PAUSED_RECORDING aside). */
function isActive(state: string): boolean {
  return state === 'PLAYING' || state === 'PAUSED_PLAYBACK' || state === 'TRANSITIONING';
}

function isIdle(state: string): boolean {
  return state === 'STOPPED' || state === 'NO_MEDIA_PRESENT';
}

/** The variables of a GENA LastChange property, or undefined when it is absent or malformed. */
function lastChangeOf(properties: Record<string, string>): Record<string, string> | undefined {
  if (!properties.LastChange) return undefined;
  try {
    return parseLastChange(properties.LastChange);
  } catch {
    return undefined;
  }
}
