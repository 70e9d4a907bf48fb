import { HubError } from './errors';
import type { Clock } from './clock';
import { HubEventBus } from './events';
import { AnnouncementManager } from './announcements';
import { PlaybackEngine, type PlayableMedia } from './playback-engine';
import type { AnnouncementMedia } from './announcement-types';
import { SessionScopes } from './session-scopes';
import { SessionStore } from './sessions';
import { SpeakerRegistry } from './speaker-registry';
import { VolumeControl } from './volume';
import type { SpeakerDriver } from '../drivers/driver';
import type { MediaCatalog, MediaHost } from '../media/types';
import type { TtsAudio } from '../tts/provider';
import type { Logger } from '../logger';
import { pointsAtLocalAddress } from '../net/local-address';
import { redactUrl } from '../redact';

/** What the core needs of text-to-speech: the TTS layer's speak(), errors already typed. */
export interface TextToSpeech {
  /** Throws InvalidParameter/TextTooLong for text that can never be spoken. */
  validate(text: string): void;
  /** voice: the provider's voice/language for this text; undefined = the configured one. */
  speak(text: string, voice?: string): Promise<TtsAudio>;
  /** The text's cached audio, or undefined if it would have to be synthesized: never synthesizes. */
  cached(text: string, voice?: string): Promise<TtsAudio | undefined>;
}

export interface HubCoreOptions {
  /** The hub's UUID (HKWHubUUID), stable across restarts. */
  uuid: string;
  clock: Clock;
  logger: Logger;
  catalog: MediaCatalog;
  mediaHost: MediaHost;
  tts: TextToSpeech;
  sessions: { idleMs: number; maxSessions: number };
  /** webMedia.refuseLocalAddresses: MediaUrls at loopback/link-local addresses fail with MediaUrlRefused. */
  refuseLocalMediaUrls?: boolean;
  /** The pre-rendered announcement chime (a WAV file), if the hub made one. */
  chimeFile?: string;
  /** Speakers that come back while a party play runs join it (default true). */
  partyRejoin?: boolean;
  /** Renders an announcement's chime and speech into one clip at the target loudness; without it they play as they are, one after the other. */
  clips?: AnnouncementAudio;
}

/** What the core needs to make one clip of an announcement's parts (src/media/announcement-clip.ts). */
export interface AnnouncementAudio {
  /** Whether a lone part is worth rendering (loudness normalisation is on). */
  readonly normalises: boolean;
  /** leadGap: the gap before the first part too (speech that plays after its chime as a play of its own). */
  render(parts: ClipPart[], options?: { leadGap?: boolean }): Promise<{ file: string; contentType: string; duration?: number }>;
  /** The clip of these parts if it is made already, else undefined: never renders. */
  cached(parts: ClipPart[]): Promise<{ file: string; contentType: string; duration?: number } | undefined>;
}

/** A part of an announcement clip: a file (its content named by `id` when known: a TTS entry) or a web URL. */
export type ClipPart = { file: string; id?: string } | { url: string };

/** What an announcement plays: exactly one of text, persistentId, mediaUrl; chime before it. */
export interface AnnouncementSource {
  text?: string;
  voice?: string;
  persistentId?: string;
  mediaUrl?: string;
  /** true: the built-in chime; a string: that hub media item. */
  chime?: boolean | string;
}

/**
 * The hub without any front end: sessions, speakers, the playback session, playback,
 * volume, media and TTS, wired together. Operation handlers talk only to this.
 */
export class HubCore {
  readonly uuid: string;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly events: HubEventBus;
  readonly sessions: SessionStore;
  readonly speakers: SpeakerRegistry;
  /** Each session's playback session, and which playback its commands mean (zones). */
  readonly scopes: SessionScopes;
  readonly playback: PlaybackEngine;
  readonly announcements: AnnouncementManager;
  readonly volume: VolumeControl;
  readonly catalog: MediaCatalog;
  private readonly mediaHost: MediaHost;
  private readonly tts: TextToSpeech;
  private readonly drivers: SpeakerDriver[] = [];
  private readonly refuseLocalMediaUrls: boolean;
  /** Media-host URLs handed out and not yet released. */
  private readonly published = new Set<string>();
  private readonly chimeFile?: string;
  private readonly clips?: AnnouncementAudio;

  constructor(options: HubCoreOptions) {
    this.uuid = options.uuid;
    this.clock = options.clock;
    this.logger = options.logger;
    this.catalog = options.catalog;
    this.mediaHost = options.mediaHost;
    this.tts = options.tts;
    this.refuseLocalMediaUrls = options.refuseLocalMediaUrls ?? false;
    this.events = new HubEventBus((err, event) =>
      options.logger.error({ event, err: err instanceof Error ? { message: err.message, stack: err.stack } : String(err) }, 'event listener failed'),
    );
    this.sessions = new SessionStore(options.clock, options.sessions);
    this.speakers = new SpeakerRegistry(this.events, options.logger);
    this.chimeFile = options.chimeFile;
    this.clips = options.clips;
    this.playback = new PlaybackEngine(this.speakers, options.clock, this.events, options.logger, {
      partyRejoin: options.partyRejoin,
    });
    this.scopes = new SessionScopes(this.speakers, this.playback, this.events, (key) => this.sessions.hasKey(key));
    this.announcements = new AnnouncementManager(this.speakers, this.playback, options.clock, this.events, options.logger);
    this.volume = new VolumeControl(this.speakers, options.logger, this.events);
    this.events.on('playbackState', () => this.releaseUnusedMedia());
    this.events.on('announcement', () => this.releaseUnusedMedia());
  }

  /**
   * Capability URLs live only as long as their playback (issue: they leak through renderers'
   * unauthenticated status queries): whenever a playback changes, every URL handed out
   * but not a live playback's is released (it stops working after the media host's
   * grace period); the current one is kept, also when a release had already been scheduled
   * for it while its play was starting.
   */
  private releaseUnusedMedia(): void {
    const host = this.mediaHost;
    if (!host.release) return;
    // Every playback's media and every unfinished announcement's stay reachable.
    const keep = this.announcements.mediaInUse();
    for (const url of this.playback.mediaInUse()) keep.add(url);
    for (const url of this.published) {
      if (keep.has(url)) continue;
      host.release(url);
      this.published.delete(url);
    }
    for (const url of keep) if (!this.published.has(url) && host.retain?.(url)) this.published.add(url);
  }

  private publish(file: string, contentType: string): string {
    const url = this.mediaHost.publish(file, contentType);
    this.published.add(url);
    return url;
  }

  async addDriver(driver: SpeakerDriver): Promise<void> {
    this.drivers.push(driver);
    this.speakers.attachDriver(driver);
    await driver.start();
  }

  async stop(): Promise<void> {
    await this.playback.shutdown();
    await Promise.allSettled(this.drivers.map((d) => d.stop()));
  }

  // ---- media sources for play_* --------------------------------------------------------

  hubMedia(persistentId: string): PlayableMedia {
    const item = this.catalog.get(persistentId);
    if (!item) throw new HubError('MediaNotFound', `No media item has PersistentID ${persistentId}.`, { parameter: 'PersistentID' });
    return {
      kind: 'hub',
      persistentId: item.persistentId,
      url: this.publish(item.file, item.contentType),
      contentType: item.contentType,
      title: item.title,
      duration: item.duration || undefined,
    };
  }

  async webMedia(url: string): Promise<PlayableMedia> {
    if (this.refuseLocalMediaUrls && (await pointsAtLocalAddress(url))) {
      throw new HubError(
        'MediaUrlRefused',
        'MediaUrl points at a loopback or link-local address; this hub refuses those (webMedia.refuseLocalAddresses).',
        {
          parameter: 'MediaUrl',
        },
      );
    }
    return { kind: 'web', url, title: redactUrl(url) };
  }

  /** Checks a Text parameter against the configured limits, before any target is looked at. */
  validateText(text: string): void {
    this.tts.validate(text);
  }

  /** The pre-rendered chime, as media. */
  chimeMedia(): PlayableMedia {
    if (!this.chimeFile) throw new HubError('MediaNotFound', 'This hub has no chime.', { parameter: 'Chime' });
    return { kind: 'hub', url: this.publish(this.chimeFile, 'audio/wav'), contentType: 'audio/wav', title: 'Chime', duration: 0.9 };
  }

  async ttsMedia(text: string, voice?: string): Promise<PlayableMedia> {
    const audio = await this.tts.speak(text, voice);
    return {
      kind: 'tts',
      url: this.publish(audio.file, audio.contentType),
      contentType: audio.contentType,
      title: text,
      duration: audio.duration,
    };
  }

  /**
   * An announcement's media: checked now (MediaNotFound, MediaUrlRefused, a Text that can
   * never be spoken), loaded by the returned function (synthesis, then one clip of chime, gap
   * and speech at the target loudness). If the clip cannot be made (no ffmpeg, a web URL
   * that does not end in time) the parts play as they are, one after the other: the
   * announcement still speaks, and the log says why it was not one clip.
   */
  async announcementMedia(src: AnnouncementSource): Promise<() => Promise<AnnouncementMedia>> {
    if (src.text !== undefined) this.validateText(src.text);
    const item = src.persistentId !== undefined ? this.catalogItem(src.persistentId, 'PersistentID') : undefined;
    const web = src.mediaUrl !== undefined ? await this.webMedia(src.mediaUrl) : undefined;
    const chimeItem = typeof src.chime === 'string' ? this.catalogItem(src.chime, 'Chime') : undefined;
    if (src.chime === true && !this.chimeFile) throw new HubError('MediaNotFound', 'This hub has no chime.', { parameter: 'Chime' });
    const chimeFile = src.chime === true ? this.chimeFile : chimeItem?.file;
    const title = src.text ?? item?.title ?? web!.title;
    const chimeMedia = () => (src.chime === true ? this.chimeMedia() : chimeItem ? this.hubMedia(chimeItem.persistentId) : undefined);
    // A repeated text (its speech and clip cached): the clip is published now, before the
    // request is answered, so the speaker can fetch it the moment the play starts.
    if (src.text !== undefined) {
      const ready = await this.cachedClip(src.text, src.voice, chimeFile).catch(() => undefined);
      if (ready) {
        const items: PlayableMedia[] = [
          { kind: 'tts', url: this.publish(ready.file, ready.contentType), contentType: ready.contentType, title, duration: ready.duration },
        ];
        return () => Promise.resolve({ items });
      }
    }
    return async () => {
      // A chime before a text still to synthesize: the chime plays at once, the synthesis runs
      // while it plays, and the speech follows as a play of its own (AnnouncementMedia.later),
      // instead of the chime waiting for the synthesis to make one clip.
      const text = src.text;
      if (chimeFile && text !== undefined && this.clips && !(await this.tts.cached(text, src.voice))) {
        // The chime's clip (cached after the first time) is asked for first: its file reads queue ahead of the synthesis's.
        const chimeClip = this.clips.render([{ file: chimeFile }]).catch(() => undefined);
        const later = this.tts.speak(text, src.voice).then(async (speech) => [await this.speechAfterChime(speech, chimeFile, title)]);
        // Its failure is the announcement's (AnnouncementManager.follow), never an unhandled rejection meanwhile.
        later.catch(() => undefined);
        const chime = await chimeClip;
        const first = chime
          ? {
              kind: 'hub' as const,
              url: this.publish(chime.file, chime.contentType),
              contentType: chime.contentType,
              title: 'Chime',
              duration: chime.duration,
            }
          : chimeMedia()!;
        return { items: [first], later };
      }
      const speech = src.text !== undefined ? await this.tts.speak(src.text, src.voice) : undefined;
      const mainSource = speech ? { file: speech.file, id: speech.id } : item ? { file: item.file } : { url: web!.url };
      const parts = [...(chimeFile ? [{ file: chimeFile }] : []), mainSource];
      if (this.clips && (parts.length > 1 || this.clips.normalises)) {
        try {
          const clip = await this.clips.render(parts);
          return {
            items: [{ kind: 'tts', url: this.publish(clip.file, clip.contentType), contentType: clip.contentType, title, duration: clip.duration }],
          };
        } catch (e) {
          this.logger.warn({ err: (e as Error)?.message ?? String(e) }, 'announcement clip not made; the parts play one after the other as they are');
        }
      }
      const chime = chimeMedia();
      const main: PlayableMedia = speech
        ? { kind: 'tts', url: this.publish(speech.file, speech.contentType), contentType: speech.contentType, title, duration: speech.duration }
        : item
          ? this.hubMedia(item.persistentId)
          : web!;
      return { items: [...(chime ? [chime] : []), main] };
    };
  }

  /**
   * The speech that follows its chime as a play of its own: the gap first, then the voice, at
   * the target loudness. The one clip of chime, gap and speech is made beside it (a few ms in
   * process), so the text's next announcement is servable before its request is answered.
   */
  private async speechAfterChime(speech: TtsAudio, chimeFile: string, title: string | undefined): Promise<PlayableMedia> {
    const part = { file: speech.file, id: speech.id };
    const [clip] = await Promise.all([
      this.clips!.render([part], { leadGap: true }).catch((e: unknown) => {
        this.logger.warn({ err: (e as Error)?.message ?? String(e) }, 'speech clip not made; the speech plays as it is');
        return speech;
      }),
      this.clips!.render([{ file: chimeFile }, part]).catch(() => undefined),
    ]);
    return { kind: 'tts', url: this.publish(clip.file, clip.contentType), contentType: clip.contentType, title, duration: clip.duration };
  }

  /** The finished clip of a text (with its chime), when its speech and the clip are cached: a stat or two, no synthesis, no rendering. */
  private async cachedClip(text: string, voice: string | undefined, chimeFile: string | undefined) {
    const speech = await this.tts.cached(text, voice);
    if (!speech) return undefined;
    const parts = [...(chimeFile ? [{ file: chimeFile }] : []), { file: speech.file, id: speech.id }];
    if (this.clips && (parts.length > 1 || this.clips.normalises)) return this.clips.cached(parts);
    // No clip is made of a lone part without loudness work: the speech is the clip.
    return parts.length === 1 ? speech : undefined;
  }

  private catalogItem(persistentId: string, parameter: string) {
    const item = this.catalog.get(persistentId);
    if (!item) throw new HubError('MediaNotFound', `No media item has PersistentID ${persistentId}.`, { parameter });
    return item;
  }
}
