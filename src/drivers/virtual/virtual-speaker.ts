import type { Clock, TimerHandle } from '../../core/clock';
import { clampVolume } from '../../core/volume-range';
import { BaseSpeaker } from '../base-speaker';
import type {
  MediaRequest,
  OverlayEnd,
  OverlayHandle,
  OverlayRequest,
  SpeakerCapabilities,
  SpeakerInfo,
  SpeakerPlayState,
  SpeakerSnapshot,
  StopReason,
} from '../driver';
import type { Logger } from '../../logger';
import { MediaDownloads, MediaFetchError, type ProbeResult } from './media-probe';

export interface FetchRecord extends Omit<ProbeResult, 'end'> {
  url: string;
  /** Fetched as an overlay mixed over the music (speakers.virtual.mix), not as what the speaker plays. */
  overlay?: boolean;
}

/** An overlay a mixing virtual speaker plays over its music. */
interface MixedOverlay {
  abort: AbortController;
  timer?: TimerHandle;
  finish: (end: OverlayEnd) => void;
}

/**
 * A speaker that exists only in the hub but behaves like a networked one: it fetches the
 * audio over HTTP, keeps time with the hub's clock, ends at the end of the media, and can
 * be told to fail or vanish so fault handling is testable end to end.
 */
export class VirtualSpeaker extends BaseSpeaker {
  readonly capabilities: SpeakerCapabilities;
  /** The overlay mixed over the music now (speakers.virtual.mix), if any. */
  private mixing?: MixedOverlay;
  private _muted = false;
  /** What it has loaded now, as a renderer's transport URI (snapshot/restore read it). */
  private media?: MediaRequest;
  private failures: string[] = [];
  private abort?: AbortController;
  private endTimer?: TimerHandle;
  private offset = 0;
  private startedAt = 0;
  private duration?: number;
  /** Where an announcement of unknown length stops at the latest (seconds into it): see maxLiveAnnouncementSeconds. */
  private limit?: number;
  /** The last downloads, newest last: tests read these to prove the audio arrived. */
  readonly fetches: FetchRecord[] = [];

  constructor(
    id: string,
    info: SpeakerInfo,
    volume: number,
    private readonly clock: Clock,
    /** Shared by the driver's speakers: one download per URL for a whole party play. */
    private readonly downloads: MediaDownloads = new MediaDownloads(),
    private readonly log?: Logger,
    /**
     * An announcement (overlay) whose length is unknown when it starts (a live stream) stops
     * after this many seconds at the latest, so that it never holds the music for ever.
     */
    private readonly maxLiveAnnouncementSeconds = 600,
    /**
     * Models a speaker that mixes announcements over its music itself (speakers.virtual.mix),
     * as Snapcast and AirPlay do through the hub and Sonos clips natively: the music goes on,
     * in time, while the overlay plays.
     */
    mixes = false,
  ) {
    super(id, 'virtual', info, { volume });
    this.capabilities = { mute: true, snapshot: true, seek: true, syncGroup: false, ...(mixes ? { duck: true } : {}) };
  }

  /**
   * Plays an overlay over the music (the driver's overlay()): fetches it as it would any
   * media, and is done with it at its end by the hub's clock; the music's state and position
   * never change. Rejects when nothing plays to mix into.
   */
  async mixOverlay(req: OverlayRequest): Promise<OverlayHandle> {
    this.assertAvailable();
    if (!this.capabilities.duck) throw new Error('this virtual speaker does not mix (speakers.virtual.mix)');
    if (this.state !== 'playing') throw new Error('the virtual speaker plays no music to mix the announcement into');
    this.endMix({ reason: 'stopped', detail: 'another overlay took over' });
    const abort = new AbortController();
    let finish!: (end: OverlayEnd) => void;
    const ended = new Promise<OverlayEnd>((resolve) => (finish = resolve));
    const mix: MixedOverlay = { abort, finish };
    this.mixing = mix;
    const download = this.downloads.fetch(req.url, abort.signal);
    let probe: ProbeResult;
    try {
      probe = await download.result;
    } catch (e) {
      if (this.mixing === mix) this.mixing = undefined;
      throw new Error(`could not play the overlay: ${e instanceof MediaFetchError ? e.message : 'the media URL could not be read'}`);
    }
    if (this.mixing !== mix || this.state !== 'playing') throw new Error('the music stopped before the overlay could be mixed into it');
    const { end: _end, ...probed } = probe;
    this.fetches.push({ url: req.url, ...probed, overlay: true });
    if (this.fetches.length > 20) this.fetches.shift();
    const seconds = req.duration ?? probe.duration ?? this.maxLiveAnnouncementSeconds;
    mix.timer = this.clock.setTimer(() => this.endMix({ reason: 'ended' }, mix), seconds * 1000);
    return { ended, stop: async () => this.endMix({ reason: 'stopped' }, mix) };
  }

  /** Ends the overlay being mixed (only `which`, when given). */
  private endMix(end: OverlayEnd, which?: MixedOverlay): void {
    const mix = this.mixing;
    if (!mix || (which && which !== mix)) return;
    this.mixing = undefined;
    mix.abort.abort();
    mix.timer?.cancel();
    mix.finish(end);
  }

  async play(media: MediaRequest): Promise<void> {
    this.assertAvailable();
    this.endMix({ reason: 'stopped', detail: 'the speaker played something else' });
    this.cancelPlayback();
    if (this.state !== 'stopped') this.setState('stopped', 'stopped');
    const abort = new AbortController();
    this.abort = abort;
    const scheme = media.url.slice(0, media.url.indexOf(':') + 1).toLowerCase();
    if (scheme !== 'http:' && scheme !== 'https:') {
      this.abort = undefined;
      // A virtual speaker only speaks HTTP; pretending to play rtsp/mms would hide a failure.
      throw new Error(`virtual speakers cannot fetch ${scheme} URLs (only http and https)`);
    }
    const injected = this.failures.shift();
    if (injected) {
      this.abort = undefined;
      throw new Error(injected);
    }
    let probe: ProbeResult;
    const download = this.downloads.fetch(media.url, abort.signal);
    try {
      probe = await download.result;
    } catch (e) {
      if (this.abort === abort) this.abort = undefined;
      if (abort.signal.aborted) throw new Error('playback was replaced before it started');
      if (e instanceof MediaFetchError) {
        // The cause (HTTP status, refused connection) stays in the log: see MediaFetchError.
        this.log?.debug({ deviceId: this.id, cause: e.detail }, 'media fetch failed');
        throw new Error(`could not play the media: ${e.message}`);
      }
      throw new Error('could not play the media: the media URL could not be read');
    }
    if (abort.signal.aborted || !this.available) throw new Error('playback was replaced before it started');
    const { end, ...probed } = probe;
    const record: FetchRecord = { url: media.url, ...probed };
    void download.done.then((bytes) => (record.bytes = bytes));
    // Media of unknown length: the record gets its duration once the body has ended.
    void end?.then((seconds) => (record.duration = seconds));
    this.fetches.push(record);
    if (this.fetches.length > 20) this.fetches.shift();
    this.duration = media.duration ?? probe.duration;
    this.limit = media.overlay && this.duration === undefined ? this.maxLiveAnnouncementSeconds : undefined;
    this.media = { url: media.url, contentType: media.contentType, title: media.title, duration: this.duration };
    this.offset = Math.max(0, media.startAt ?? 0);
    this.startRunning();
    if (this.duration === undefined && end) {
      // Unknown length: the playback ends when the body does, at the time its audio says.
      void end.then((seconds) => {
        if (this.abort === abort && this.duration === undefined) this.lengthKnown(seconds);
      });
    }
  }

  async pause(): Promise<void> {
    this.assertAvailable();
    if (this.state !== 'playing') return;
    this.endMix({ reason: 'stopped', detail: 'the music was paused' });
    this.offset = this.position() ?? 0;
    this.endTimer?.cancel();
    this.setState('paused');
  }

  async resume(): Promise<void> {
    this.assertAvailable();
    if (this.state !== 'paused') return;
    this.startRunning();
  }

  async stop(): Promise<void> {
    this.endMix({ reason: 'stopped' });
    this.cancelPlayback();
    if (this.state !== 'stopped') this.setState('stopped', 'stopped');
  }

  position(): number | undefined {
    if (this.state === 'stopped') return undefined;
    const elapsed = this.state === 'playing' ? (this.clock.now() - this.startedAt) / 1000 : 0;
    const pos = this.offset + elapsed;
    return this.duration !== undefined ? Math.min(pos, this.duration) : pos;
  }

  async setVolume(volume: number): Promise<void> {
    this.assertAvailable();
    this.setReportedVolume(clampVolume(volume));
  }

  isMuted(): boolean {
    return this._muted;
  }

  async setMute(muted: boolean): Promise<void> {
    this.assertAvailable();
    this._muted = muted;
  }

  /** Reads its own transport, as a UPnP renderer answers GetMediaInfo/GetPositionInfo/GetTransportInfo. */
  async snapshot(): Promise<SpeakerSnapshot> {
    this.assertAvailable();
    return {
      state: this.state,
      ...(this.state !== 'stopped' && this.media ? { ...this.media, position: this.position() } : {}),
      volume: this.volume,
      muted: this._muted,
      takenAt: this.clock.now(),
    };
  }

  /** Loads the snapshot's media again at its position, in its state, at its volume and mute. */
  async restore(snap: SpeakerSnapshot, options: { volumeOnly?: boolean } = {}): Promise<void> {
    this.assertAvailable();
    await this.setVolume(snap.volume);
    this._muted = !!snap.muted;
    if (options.volumeOnly) return;
    if (snap.state === 'stopped' || !snap.url) {
      await this.stop();
      return;
    }
    await this.play({ url: snap.url, contentType: snap.contentType, title: snap.title, duration: snap.duration, startAt: snap.position ?? 0 });
    if (snap.state === 'paused') await this.pause();
  }

  // ---- fault injection -------------------------------------------------------------

  /** The next play() call rejects with this message (one queued failure per call). */
  failNextPlay(message = 'injected speaker fault'): void {
    this.failures.push(message);
  }

  /** The speaker drops off the network: whatever it played stops with an error. */
  vanish(): void {
    if (!this.available) return;
    this.setAvailable(false, () => {
      const wasActive = this.state !== 'stopped';
      this.endMix({ reason: 'error', detail: 'speaker vanished' });
      this.cancelPlayback();
      if (wasActive) this.setState('stopped', 'error', 'speaker vanished');
    });
  }

  reappear(): void {
    this.setAvailable(true);
  }

  /** Changes descriptive fields, as a speaker renamed in its own app would. */
  update(changed: Partial<SpeakerInfo>): void {
    this.updateInfo(changed);
  }

  // ---- internals ----------------------------------------------------------------------

  private startRunning(): void {
    this.startedAt = this.clock.now();
    this.scheduleEnd();
    this.setState('playing');
  }

  /** The end timer, at the media's end or, for an announcement of unknown length, at its limit. */
  private scheduleEnd(): void {
    this.endTimer?.cancel();
    this.endTimer = undefined;
    const end = Math.min(this.duration ?? Infinity, this.limit ?? Infinity);
    if (end === Infinity) return;
    const elapsed = (this.clock.now() - this.startedAt) / 1000;
    const remainingMs = Math.max(0, (end - this.offset - elapsed) * 1000);
    this.endTimer = this.clock.setTimer(() => this.ended(), remainingMs);
  }

  /**
   * The body of a media of unknown length has ended: its duration is now known (or, if it
   * cannot be decoded, it ends where it is now, as a speaker's decoder runs dry).
   */
  private lengthKnown(seconds: number | undefined): void {
    this.duration = seconds ?? this.position() ?? 0;
    if (this.media) this.media = { ...this.media, duration: this.duration };
    if (this.state === 'playing') this.scheduleEnd();
  }

  private ended(): void {
    this.endMix({ reason: 'stopped', detail: 'the music ended' });
    this.endTimer = undefined;
    this.abort = undefined;
    this.setState('stopped', 'ended');
  }

  private cancelPlayback(): void {
    this.abort?.abort();
    this.abort = undefined;
    this.endTimer?.cancel();
    this.endTimer = undefined;
  }

  private setState(state: SpeakerPlayState, reason?: StopReason, detail?: string): void {
    this.setPlayState(state, reason, detail);
  }
}
