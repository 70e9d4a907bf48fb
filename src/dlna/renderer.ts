import type { PlaybackSnapshot } from '../core/events';
import type { Logger } from '../logger';
import { formatTime, parseTime, readDidl } from '../protocols/upnp/didl';
import { writeDidl } from './didl';
import { type AnnounceMode, type HubChange, type HubPort, type ZoneRef } from './hub-port';
import { findAction, type ServiceName, type TransportState } from './scpd';
import { UpnpError } from '../protocols/upnp/soap';
import { checkUrlTarget } from './url-policy';
import { ChangeWaits, within } from './change-waits';
import { hasKnownLength } from './media-length';
import { command, RendererLevels } from './renderer-levels';
import { redactUrl } from '../redact';
import { AVT_EVENTED, checkUrl, fixedAnswer, lastChange, mediaInfo, positionInfo, toUpnpError, toUpnpVolume } from './renderer-values';

export { AVT_EVENTED, lastChange, SINK_PROTOCOLS, toHubVolume, toUpnpError, toUpnpVolume } from './renderer-values';

/**
 * One published MediaRenderer and its state machine. Three kinds share it:
 * - 'speaker': plays on one speaker (play_web_media_selected_speakers);
 * - 'all': "All speakers", party-mode plays;
 * - 'announce': "<name> (announcements)", every play an `announce` with restore.
 *
 * Each renderer is a room: a speaker's renderer is PLAYING while the speaker's zone (the
 * playback it is in) plays, whoever started it (REST, MQTT, another renderer), and STOPPED
 * otherwise; "All speakers" shows the zone that holds every speaker. Its own URI, metadata and
 * next URI are kept here; what the hub plays is read from the hub's events.
 */

export type RendererKind = 'speaker' | 'all' | 'announce';

/** What Play waits for before answering; a slower start answers OK and shows in the state. */
const PLAY_ANSWER_MS = 8000;
/** The longest a Stop waits for its STOPPED event to reach the subscribed control points before it answers. */
const STOP_EVENT_WAIT_MS = 2000;
/** The longest a started play stays TRANSITIONING while its zone's event is on its way. */
const PLAY_EVENT_WAIT_MS = 2000;

export interface RendererIdentity {
  kind: RendererKind;
  udn: string;
  /** Path segment of its URLs (/r/<slug>/…). */
  slug: string;
  /** The speaker (for 'speaker' and 'announce'). */
  deviceId?: string;
}

export class Renderer {
  private uri = '';
  private meta = '';
  private nextUri = '';
  private nextMeta = '';
  private status: 'OK' | 'ERROR_OCCURRED' = 'OK';
  /** A Play is on its way to the hub. */
  private pending = false;
  /** The hub's playback carried this renderer at the last look (for the gapless next). */
  private wasMine = false;
  /** Announcement renderer: the announcement it started, and whether it sounds now. */
  private announcementId?: string;
  private announcing = false;
  /**
   * Paused here: this renderer's web file, stopped on the hub at `at` seconds, PAUSED_PLAYBACK
   * until Play starts it there again (the hub's pause_play stops web media, as the spec says).
   */
  private paused?: { at: number };
  /** RenderingControl: volume and mute. */
  private readonly levels: RendererLevels;
  /** Last values sent per service, so LastChange carries only what changed. */
  private readonly sent: Record<'AVTransport' | 'RenderingControl', Map<string, string>> = { AVTransport: new Map(), RenderingControl: new Map() };
  /** Events sent and not yet delivered to every subscriber. */
  private readonly inflight = new Set<Promise<void>>();
  /** Waits for the hub's changes to arrive here (Stop for its STOPPED, a play for its zone). */
  private readonly waits = new ChangeWaits();
  /** dlna.allowLocalUrls: URIs at the hub's own machine are taken (url-policy.ts). */
  allowLocalUrls = false;
  /** A URL of the hub's own MediaServer (its library's tracks): taken though it points at the hub. */
  ownMediaUrl: (url: string) => boolean = () => false;

  constructor(
    readonly id: RendererIdentity,
    private readonly hub: HubPort,
    private readonly log: Logger,
    /** Called with a service's LastChange document whenever an evented variable changed. */
    private readonly notify: (service: 'AVTransport' | 'RenderingControl', lastChange: string) => Promise<void> | void,
    /** Announcement renderer: how its announcements treat the music (config dlna.announcementMode). */
    private readonly announceMode?: AnnounceMode,
  ) {
    this.levels = new RendererLevels(id, hub);
  }

  get friendlyName(): string {
    if (this.id.kind === 'all') return 'All speakers';
    const name = this.hub.speaker(this.id.deviceId!)?.name ?? this.id.deviceId!;
    return this.id.kind === 'announce' ? `${name} (announcements)` : name;
  }

  // ---- state ---------------------------------------------------------------------------------

  /** This renderer's zone: its speaker's playback, or for "All speakers" the party (every speaker's). */
  private zone(): PlaybackSnapshot {
    return this.hub.playback(this.id.kind === 'all' ? undefined : this.id.deviceId);
  }

  /** The zone as the hub names it in commands. */
  private zoneRef(): ZoneRef {
    if (this.id.kind !== 'all') return { deviceId: this.id.deviceId! };
    return { playbackId: this.zone().playbackId ?? 'pb-0' };
  }

  /** Whether this renderer's zone plays (or this renderer's announcement) now. */
  private mine(p: PlaybackSnapshot = this.zone()): boolean {
    if (this.id.kind === 'announce') return this.announcing;
    return p.state !== 'PlayerStateStopped';
  }

  transportState(): TransportState {
    const p = this.zone();
    if (this.mine(p)) {
      if (this.id.kind === 'announce') return 'PLAYING';
      return p.state === 'PlayerStatePaused' ? 'PAUSED_PLAYBACK' : 'PLAYING';
    }
    if (this.pending) return 'TRANSITIONING';
    if (this.paused) return 'PAUSED_PLAYBACK';
    return this.uri ? 'STOPPED' : 'NO_MEDIA_PRESENT';
  }

  /** The URI and metadata of what plays: ours, or what another front end started on the speaker. */
  private track(): { uri: string; meta: string } {
    const p = this.zone();
    if (this.id.kind !== 'announce' && this.mine(p)) {
      if (p.url && p.url !== this.uri) return { uri: p.url, meta: writeDidl(p.url, p.title) };
      // Hub media and speech: their URL is the media server's secret, so the title alone (a
      // control point shows it; before, it showed this renderer's last URI, or nothing).
      if (!p.url && p.title !== undefined) return { uri: '', meta: writeDidl('', p.title) };
    }
    return { uri: this.uri, meta: this.meta };
  }

  /**
   * CurrentTransportActions, the same in every state: Home Assistant makes its entity's features
   * of them (none listed = all) and warns "updating its capabilities too often" when they change
   * at each event. Only what is performed: no Seek (hub media cannot), nothing but Play on an
   * announcement renderer (an announcement plays out), Next while one is queued.
   */
  private actions(): string {
    if (this.id.kind === 'announce') return 'Play';
    return 'Play,Pause,Stop' + (this.nextUri ? ',Next' : '');
  }

  private avtValues(): Record<(typeof AVT_EVENTED)[number], string> {
    const state = this.transportState();
    const t = this.track();
    return {
      TransportState: state,
      TransportStatus: this.status,
      PlaybackStorageMedium: t.uri ? 'NETWORK' : 'NONE',
      CurrentPlayMode: 'NORMAL',
      TransportPlaySpeed: '1',
      NumberOfTracks: t.uri ? '1' : '0',
      CurrentTrack: t.uri ? '1' : '0',
      CurrentTrackDuration: '0:00:00',
      CurrentMediaDuration: '0:00:00',
      CurrentTrackURI: t.uri,
      CurrentTrackMetaData: t.meta,
      AVTransportURI: t.uri,
      AVTransportURIMetaData: t.meta,
      NextAVTransportURI: this.nextUri,
      NextAVTransportURIMetaData: this.nextMeta,
      CurrentTransportActions: this.actions(),
    };
  }

  /** The full LastChange a new subscriber gets first (UDA: the initial event carries every evented variable). */
  initialLastChange(service: 'AVTransport' | 'RenderingControl'): string {
    const values = service === 'AVTransport' ? this.avtValues() : this.levels.values();
    return lastChange(service, values);
  }

  /** Sends LastChange for the variables that changed since the last one; resolves once the subscribers have it. */
  refresh(): Promise<void> {
    const delivered: (Promise<void> | void)[] = [];
    for (const service of ['AVTransport', 'RenderingControl'] as const) {
      const values: Record<string, string> = service === 'AVTransport' ? this.avtValues() : this.levels.values();
      const sent = this.sent[service];
      const changed: Record<string, string> = {};
      for (const [k, v] of Object.entries(values)) {
        if (sent.get(k) !== v) {
          changed[k] = v;
          sent.set(k, v);
        }
      }
      if (Object.keys(changed).length) {
        const sent = Promise.resolve(this.notify(service, lastChange(service, changed)));
        // Kept until delivered: a later refresh (Stop's) waits for what an earlier one sent too.
        this.inflight.add(sent);
        void sent.finally(() => this.inflight.delete(sent));
      }
    }
    for (const p of this.inflight) delivered.push(p);
    return Promise.all(delivered).then(() => undefined);
  }

  /** A change of the hub's state (from its wire events). */
  hubChanged(c: HubChange): void {
    if (c.kind === 'playback') this.playbackChanged(c.snapshot);
    if (c.kind === 'announcement' && c.event.announcementId === this.announcementId) {
      if (c.event.phase === 'started') this.announcing = true;
      else {
        this.announcing = false;
        if (c.event.phase === 'failed') this.status = 'ERROR_OCCURRED';
        this.announcementId = undefined;
      }
    }
    if (c.kind !== 'time') void this.refresh();
    this.waits.changed();
  }

  private playbackChanged(p: PlaybackSnapshot): void {
    if (this.id.kind === 'announce') return;
    // Any zone's event: this renderer's state is its own zone's, after the change.
    const mine = this.mine();
    const ended = this.wasMine && !mine && p.reason === 'ended';
    // Something else started on the zone while this renderer's file was paused: that pause is gone.
    if (mine && !this.wasMine) this.paused = undefined;
    this.wasMine = mine;
    if (mine) this.status = 'OK';
    if (ended && this.nextUri) {
      // Gapless next: what SetNextAVTransportURI queued plays when the current track ends.
      this.advance();
      void this.startPlay().catch((e: Error) => this.log.warn({ err: e.message, renderer: this.friendlyName }, 'DLNA: next track failed'));
    }
  }

  private advance(): void {
    this.uri = this.nextUri;
    this.meta = this.nextMeta;
    this.nextUri = '';
    this.nextMeta = '';
  }

  // ---- actions -------------------------------------------------------------------------------

  /** Runs one SOAP action (already checked to exist with its input arguments). */
  async act(service: ServiceName, action: string, args: Record<string, string>): Promise<Record<string, string | number>> {
    const spec = findAction(service, action);
    if (!spec) throw new UpnpError('InvalidAction');
    for (const name of Object.keys(spec.in)) if (!(name in args)) throw new UpnpError('InvalidArgs', `missing argument ${name}`);
    if ('InstanceID' in spec.in && args.InstanceID.trim() !== '0') {
      throw service === 'RenderingControl' ? new UpnpError('NoContents', 'Invalid InstanceID') : new UpnpError('InvalidInstanceId');
    }
    if ('Channel' in spec.in && args.Channel !== 'Master') throw new UpnpError('InvalidArgs', 'only the Master channel exists');
    const out = await this.run(service, action, args);
    void this.refresh();
    return out;
  }

  private async run(service: ServiceName, action: string, a: Record<string, string>): Promise<Record<string, string | number>> {
    switch (`${service}#${action}`) {
      case 'AVTransport#SetAVTransportURI':
        return this.setUri(a.CurrentURI, a.CurrentURIMetaData);
      case 'AVTransport#SetNextAVTransportURI':
        if (a.NextURI) checkUrl(a.NextURI);
        await checkUrlTarget(a.NextURI.trim(), this.allowLocalUrls || this.ownMediaUrl(a.NextURI.trim()));
        this.nextUri = a.NextURI.trim();
        this.nextMeta = a.NextURIMetaData;
        return {};
      case 'AVTransport#Play':
        return this.play(a.Speed);
      case 'AVTransport#Pause':
        return this.pause();
      case 'AVTransport#Stop':
        return this.stop();
      case 'AVTransport#Seek':
        return this.seek(a.Unit, a.Target);
      case 'AVTransport#Next':
        if (!this.nextUri) throw new UpnpError('TransitionNotAvailable', 'no next track');
        this.advance();
        await this.startPlay();
        return {};
      case 'AVTransport#GetTransportInfo':
        return { CurrentTransportState: this.transportState(), CurrentTransportStatus: this.status, CurrentSpeed: '1' };
      case 'AVTransport#GetMediaInfo':
        return mediaInfo(this.avtValues());
      case 'AVTransport#GetPositionInfo': {
        const p = this.zone();
        const rel = this.id.kind !== 'announce' && this.mine(p) ? p.timeElapsed : (this.paused?.at ?? 0);
        return positionInfo(this.avtValues(), formatTime(rel));
      }
      case 'AVTransport#GetCurrentTransportActions':
        return { Actions: this.actions() };
      case 'RenderingControl#GetVolume':
        return { CurrentVolume: toUpnpVolume(this.levels.volume()) };
      case 'RenderingControl#SetVolume':
        return this.levels.setVolume(a.DesiredVolume);
      case 'RenderingControl#GetMute':
        return { CurrentMute: this.levels.muted() ? '1' : '0' };
      case 'RenderingControl#SetMute':
        return this.levels.setMute(a.DesiredMute);
      default:
        return fixedAnswer(`${service}#${action}`, a);
    }
  }

  private async setUri(uri: string, meta: string): Promise<Record<string, string>> {
    const url = uri.trim();
    if (url) checkUrl(url);
    await checkUrlTarget(url, this.allowLocalUrls || this.ownMediaUrl(url));
    // An announcement renderer that announces starts the next one too (queued behind it): Home
    // Assistant sends no Play after SetAVTransportURI to a renderer it last saw PLAYING.
    const playing = this.transportState() === 'PLAYING';
    this.uri = url;
    this.meta = meta;
    this.paused = undefined;
    this.status = 'OK';
    this.log.debug({ renderer: this.friendlyName, title: readDidl(meta).title }, 'DLNA: URI set');
    // A new URI while playing replaces the track at once (as renderers do); otherwise it waits for Play.
    if (playing && url) await this.startPlay();
    return {};
  }

  private async play(speed: string): Promise<Record<string, string>> {
    if (speed.trim() !== '1') throw new UpnpError('ArgumentValueInvalid', 'only Speed 1 is supported');
    if (this.paused && !this.mine()) {
      // Paused web file: a new start where it stopped.
      await this.startPlay(this.paused.at);
      return {};
    }
    if (this.id.kind !== 'announce' && this.mine()) {
      const p = this.zone();
      if (p.state === 'PlayerStatePlaying') return {};
      // Paused hub media (paused here or by any front end) resumes where it stopped.
      if (p.state === 'PlayerStatePaused' && p.persistentId) {
        const target = this.id.kind === 'all' ? ({ party: true } as const) : { deviceIds: [this.id.deviceId!] };
        await command(() => this.hub.resume(p.persistentId!, target));
        return {};
      }
    }
    if (!this.uri) throw new UpnpError('TransitionNotAvailable', 'no media: SetAVTransportURI first');
    await this.startPlay();
    return {};
  }

  /** Starts this renderer's URI on the hub; answers once the hub started it (or after PLAY_ANSWER_MS). */
  private async startPlay(startAt = 0): Promise<void> {
    const url = this.uri;
    const before = this.zone().playbackId;
    this.paused = undefined;
    this.pending = true;
    this.status = 'OK';
    void this.refresh();
    const started = (async () => {
      try {
        if (this.id.kind === 'all') await this.hub.playParty(url, startAt);
        else if (this.id.kind === 'speaker') await this.hub.playOn([this.id.deviceId!], url, startAt);
        else {
          this.announcementId = await this.hub.announce(this.id.deviceId!, url, this.levels.announceVolume, this.announceMode);
        }
        // The hub's answer comes before its event: TRANSITIONING holds until the new zone shows up
        // here (a start while playing ends the old zone first), so subscribers never see a stray
        // STOPPED between the two (HA's entities flickered).
        if (this.id.kind !== 'announce') await this.waits.until(() => this.mine() && this.zone().playbackId !== before, PLAY_EVENT_WAIT_MS);
      } catch (e) {
        this.status = 'ERROR_OCCURRED';
        throw toUpnpError(e);
      } finally {
        this.pending = false;
        void this.refresh();
      }
    })();
    // A start that fails after the answer still shows in the state (ERROR_OCCURRED); not unhandled.
    started.catch(() => undefined);
    await within(started, PLAY_ANSWER_MS);
  }

  /**
   * Hub media pauses on the hub (and resumes where it was). This renderer's own web URL: a file
   * (known length) stops on the hub and its position is kept here, PAUSED_PLAYBACK meanwhile,
   * for Play to start it there again; a live stream stops (the spec's pause of web media).
   */
  private async pause(): Promise<Record<string, string>> {
    if (this.paused) return {};
    if (this.id.kind === 'announce' || !this.mine()) throw new UpnpError('TransitionNotAvailable', 'not playing');
    if (this.ownWebMedia() && (await hasKnownLength(this.uri)) && this.ownWebMedia()) {
      this.paused = { at: Math.max(0, this.zone().timeElapsed) };
      try {
        await command(() => this.hub.stopPlay(this.zoneRef()));
      } catch (e) {
        this.paused = undefined;
        throw e;
      }
      // A Play right after must find it paused here, not still playing on the hub.
      await this.eventedOff();
      return {};
    }
    await command(() => this.hub.pause(this.zoneRef()));
    return {};
  }

  /** Whether the zone plays this renderer's own URI (web media it started), now. */
  private ownWebMedia(): boolean {
    const p = this.zone();
    return this.id.kind !== 'announce' && p.state === 'PlayerStatePlaying' && p.kind === 'web' && !!this.uri && p.url === redactUrl(this.uri);
  }

  /**
   * Stop answers once the control points subscribed here have the STOPPED event: Home Assistant
   * decides whether to send Play after its next SetAVTransportURI from the state it last got by
   * event, so a Stop answered before its event loses that play (notes: home-assistant.md).
   */
  private async stop(): Promise<Record<string, string>> {
    // An announcement cannot be cut short alone (stop_play would end the music too): it plays out.
    if (this.id.kind === 'announce') return {};
    if (this.paused && !this.mine()) {
      this.paused = undefined;
      await this.eventedOff();
      return {};
    }
    if (!this.mine()) return {};
    await command(() => this.hub.stopPlay(this.zoneRef()));
    await this.eventedOff();
    return {};
  }

  /**
   * Waits (bounded by STOP_EVENT_WAIT_MS) until the hub's stop has reached this renderer (an
   * event, asynchronously) and the subscribers have the new state.
   */
  private async eventedOff(): Promise<void> {
    const deadline = Date.now() + STOP_EVENT_WAIT_MS;
    await this.waits.until(() => !this.mine(), STOP_EVENT_WAIT_MS);
    await within(this.refresh(), Math.max(0, deadline - Date.now()));
  }

  /**
   * Seek within this renderer's own web file (a new start there; paused, the position to resume
   * at); hub media cannot seek: only "where it is" and "from the start" are honoured.
   */
  private async seek(unit: string, target: string): Promise<Record<string, string>> {
    if (unit !== 'REL_TIME' && unit !== 'ABS_TIME') throw new UpnpError('SeekModeNotSupported');
    const to = parseTime(target);
    if (to === undefined) throw new UpnpError('IllegalSeekTarget', 'target is not H:MM:SS');
    if (this.paused && !this.mine()) {
      this.paused = { at: to };
      return {};
    }
    if (this.id.kind === 'announce' || !this.mine()) throw new UpnpError('TransitionNotAvailable', 'not playing');
    const at = this.zone().timeElapsed;
    if (Math.abs(to - at) <= 1) return {};
    if (to === 0 && this.uri) {
      await this.startPlay();
      return {};
    }
    if (this.ownWebMedia() && (await hasKnownLength(this.uri))) {
      await this.startPlay(to);
      return {};
    }
    throw new UpnpError('IllegalSeekTarget', 'the hub cannot seek within this media (hub media or a live stream)');
  }
}
