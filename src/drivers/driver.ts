import { createHash } from 'node:crypto';
import type { EventEmitter } from 'node:events';

/**
 * The one interface every speaker protocol sits behind (virtual, UPnP/DLNA, Snapcast).
 * The core never sees a protocol: it asks a speaker to play a URL the hub serves, and
 * listens to what the speaker reports.
 */

/** Descriptive fields of a speaker; the hub adds DeviceID, Active, IsPlaying and Volume. */
export interface SpeakerInfo {
  name: string;
  groupName: string;
  /** Digit string. */
  groupId: string;
  modelName: string;
  /** Firmware version. */
  version: string;
  /** Spec gap: no values are defined. Drivers report 21 (stand-alone speaker) unless the protocol says otherwise. */
  role: number;
  /** May be ''. */
  macAddress: string;
  ipAddress: string;
  port: number;
  /** dBm, negative; 0 when the protocol cannot tell. */
  wifiSignalStrength: number;
}

export interface MediaRequest {
  /** URL the speaker fetches: the hub's media server for hub media and TTS, the web URL otherwise. */
  url: string;
  contentType?: string;
  title?: string;
  /** Seconds, when the hub knows it (hub media, TTS). */
  duration?: number;
  /** Seconds to start into the media (resume on a speaker that was not paused). */
  startAt?: number;
  /**
   * Played over another playback for a while (an announcement): drivers whose speakers share
   * one stream (Snapcast) play it on a stream of its own, so the others keep the music.
   */
  overlay?: boolean;
  /**
   * Mix this media over what the speaker plays instead of replacing it (an announcement in
   * Mode duck): the music fades down by levelDb over fadeMs, the media plays on top, the
   * music fades back up. The core sends it only through SpeakerDriver.overlay (drivers whose
   * capabilities.duck is true); a driver's playGroup may still route it there itself.
   */
  duck?: DuckRequest;
  /**
   * The instant (syncClockMs) at which the media at startAt is to be heard. The engine agrees
   * one when a play spans several drivers that each start their own speakers in sync
   * (Squeezebox and Snapcast in one party play), so that the families start together; each
   * driver maps it onto its protocol's clock. Only drivers with startLeadMs get it; without it
   * a driver starts as soon as it can. An instant already past is ignored.
   */
  startInstant?: number;
  /**
   * The playback (zone) this media plays for: the same for a zone's first start, a speaker
   * joining it and one given back after an announcement; absent for overlays. Drivers whose
   * speakers share a stream or a sync group (Snapcast, Squeezebox, AirPlay) key them by zone,
   * so two zones never share one and a rejoin finds its zone without guessing by URL.
   */
  zone?: string;
}

/** The clock start instants are on: ms, monotonic (performance.now) from the process's epoch origin. */
export function syncClockMs(): number {
  return performance.timeOrigin + performance.now();
}

export interface DuckRequest {
  /** dB the music goes down while the media plays (negative, -40..0). */
  levelDb: number;
  /** Fade down before, and up after, in ms. */
  fadeMs: number;
  /** The announcement's Volume (0–50), when given: the level of the voice, the speaker's own volume stays. */
  voiceVolume?: number;
}

/**
 * An announcement the driver plays over what its speakers play (SpeakerDriver.overlay): the
 * speakers stay in their playback (zone) the whole time — the music goes on under the voice,
 * lowered — and afterwards they simply go on; nothing is given back, nothing rejoins.
 */
export interface OverlayRequest {
  url: string;
  contentType?: string;
  title?: string;
  /** Seconds, when the hub knows it. */
  duration?: number;
  duck: DuckRequest;
}

/** How an overlay ended on a speaker: heard to its end, stopped (cut short), or failed. */
export interface OverlayEnd {
  reason: StopReason;
  detail?: string;
}

/**
 * One speaker's part of an overlay, from the moment it is heard. `ended` settles (never
 * rejects) once the overlay is over for this speaker and the music is back at its level for
 * the listener; stop() cuts it short (the music fades back up) and resolves once it has.
 */
export interface OverlayHandle {
  readonly ended: Promise<OverlayEnd>;
  stop(): Promise<void>;
}

/**
 * A driver's answer (a rejected overlay() result) when it cannot mix this overlay over this
 * speaker's music in place, but the speaker can still hear it over the music another way: the
 * core then takes the speaker out of its playback for the overlay (snapshot, plain play with
 * MediaRequest.duck, give back after), its fallback for drivers without overlays.
 */
export class OverlayUnavailable extends Error {
  readonly code = 'OverlayUnavailable';
}

export type SpeakerPlayState = 'playing' | 'paused' | 'stopped';
/** Why a speaker stopped: 'ended' at the end of the media, 'error' on a fault, 'stopped' when told to. */
export type StopReason = 'ended' | 'error' | 'stopped';

export interface SpeakerEvents {
  state: [state: SpeakerPlayState, reason?: StopReason, detail?: string];
  availability: [available: boolean];
  info: [changed: Partial<SpeakerInfo>];
  volume: [volume: number];
  /**
   * The speaker was paused or resumed by its own means (its app, remote or buttons), not by a
   * hub command, while it played the hub's media. Emitted after the 'state' event it explains.
   * Optional: only drivers that can tell their own commands from the speaker's emit it; the
   * playback engine follows it into playback_status (src/core/playback-engine.ts).
   */
  ownPlayState: [state: 'playing' | 'paused'];
}

export interface Speaker extends EventEmitter<SpeakerEvents> {
  /** Stable digit string, unique across drivers (drivers derive it from a protocol id). */
  readonly id: string;
  readonly driver: string;
  readonly available: boolean;
  readonly state: SpeakerPlayState;
  /** 0–50. */
  readonly volume: number;
  info(): SpeakerInfo;
  /** Resolves once the speaker has the media and is playing; rejects if it cannot. */
  play(media: MediaRequest): Promise<void>;
  pause(): Promise<void>;
  resume(): Promise<void>;
  stop(): Promise<void>;
  /** Position in seconds as the speaker reports it, or undefined when it cannot tell. */
  position(): number | undefined;
  /** 0–50; the driver maps to its protocol's range and clamps. */
  setVolume(volume: number): Promise<void>;

  // ---- optional (additive) parts: drivers that lack them still work -----------------

  /** What this speaker can do beyond the basics; absent means none of the optional parts. */
  readonly capabilities?: SpeakerCapabilities;
  /**
   * Mute, apart from volume: a muted speaker keeps its level. Drivers that have no mute of
   * their own leave these out (volume 0 is then the only silence).
   */
  isMuted?(): boolean;
  setMute?(muted: boolean): Promise<void>;
  /**
   * What the speaker is doing now, read from the speaker itself (also what another app
   * started on it), so that an overlay (an announcement) can put it back afterwards.
   */
  snapshot?(): Promise<SpeakerSnapshot>;
  /**
   * Puts back a snapshot taken by this speaker: volume and mute exactly as they were (the
   * protocol's own level, no rounding through 0–50), then, unless `volumeOnly`, the
   * transport (URI and metadata, position, playing/paused/stopped).
   */
  restore?(snapshot: SpeakerSnapshot, options?: { volumeOnly?: boolean }): Promise<void>;
  /**
   * Why an announcement to `targets` (DeviceIDs, this speaker among them) cannot be mixed into
   * what this speaker plays right now, in words for people, or undefined when it can. A driver
   * mixes only audio it produces (Snapcast: not another source's stream), and only for all who
   * hear that audio; a driver without capabilities.duck may say why it never can (Squeezebox).
   * The announcement then interrupts, and announcement_status gives this as ModeReason.
   */
  duckUnavailable?(targets: readonly string[]): string | undefined;
}

export interface SpeakerCapabilities {
  /** setMute()/isMuted() are the speaker's own mute. */
  mute: boolean;
  /** snapshot()/restore() read and put back the speaker's transport. */
  snapshot: boolean;
  /** play() honours startAt (a seek into the media). */
  seek: boolean;
  /** Plays of several speakers of this driver start in sync (driver playGroup). */
  syncGroup: boolean;
  /**
   * What restore() cannot put back, in words for people; announcement_status says it for the
   * announcements on such a speaker (never pretend: AirPlay cannot hand a receiver back to the
   * phone whose stream an announcement took over).
   */
  restoreLimit?: string;
  /**
   * The driver plays announcements over this speaker's music itself (SpeakerDriver.overlay):
   * it produces the audio the speaker plays and mixes the voice into it, the music going on,
   * lowered (the native announce of Music Assistant's players; Sonos audio clips and Cast
   * would declare it too). Absent: a speaker that fetches a URL itself (UPnP, MPD, virtual by
   * default) cannot, and the core's fallback runs (snapshot, interrupt, restore).
   */
  duck?: boolean;
}

/** A speaker's own state, as snapshot() reads it. Drivers may add their own fields in `driver`. */
export interface SpeakerSnapshot {
  state: SpeakerPlayState;
  /** The media it has loaded (any app's), when it has one. */
  url?: string;
  /** Protocol metadata for url (UPnP: DIDL-Lite), passed back as it came. */
  metadata?: string;
  contentType?: string;
  title?: string;
  duration?: number;
  /** Seconds into the media when the snapshot was taken. */
  position?: number;
  volume: number;
  muted?: boolean;
  /** Clock ms when it was taken (a playing snapshot is restored that much further on). */
  takenAt: number;
  /** Driver-private data (Snapcast: stream and group). */
  driver?: unknown;
}

export interface DriverEvents {
  speakerAdded: [speaker: Speaker];
  speakerRemoved: [speaker: Speaker];
}

export interface SpeakerDriver extends EventEmitter<DriverEvents> {
  readonly name: string;
  /** Starts discovery; speakers found are announced with speakerAdded. */
  start(): Promise<void>;
  stop(): Promise<void>;
  speakers(): Speaker[];
  /**
   * Optional: starts the same media on several of this driver's speakers as one act, for
   * protocols that play in sync (Snapcast: one stream, one group) or can start faster
   * together. Results are in the order of `speakers`. Without it, the core calls play() on
   * each speaker in parallel.
   */
  playGroup?(speakers: Speaker[], media: MediaRequest): Promise<PromiseSettledResult<void>[]>;
  /**
   * Optional, with playGroup: the least time (ms) from a play request to an instant at which
   * these speakers can be heard, started in sync. A driver that has it honours
   * MediaRequest.startInstant, so the engine can start it together with other such drivers.
   */
  startLeadMs?(speakers: Speaker[]): number;
  /**
   * Required when the driver's speakers declare capabilities.duck: plays an overlay (an
   * announcement mixed over the music) on several of its speakers at once. Results are in the
   * order of `speakers`: a handle once the speaker hears the overlay, or why it cannot (the
   * caller then gives up on that speaker; nothing was changed on it). Before it is called the
   * core asked each speaker's duckUnavailable(); a driver still says no when that changed.
   */
  overlay?(speakers: Speaker[], request: OverlayRequest): Promise<PromiseSettledResult<OverlayHandle>[]>;
}

/** Derives a stable digit-string id (up to 14 digits, like the original hub's) from a protocol id. */
export function digitId(seed: string, digits = 14): string {
  const h = createHash('sha256').update(seed).digest();
  const n = h.readBigUInt64BE(0) % 10n ** BigInt(digits - 1);
  // A leading 1–9 keeps the length fixed so ids never lose digits when parsed as numbers.
  return String(BigInt(1 + (h[8] % 9)) * 10n ** BigInt(digits - 1) + n);
}
