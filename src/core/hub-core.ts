import { HubError } from './errors';
import type { Clock } from './clock';
import { HubEventBus } from './events';
import { PlaybackEngine, type PlayableMedia } from './playback-engine';
import { Selection } from './selection';
import { SessionStore } from './sessions';
import { SpeakerRegistry } from './speaker-registry';
import { VolumeControl } from './volume';
import type { SpeakerDriver } from '../drivers/driver';
import type { MediaCatalog, MediaHost } from '../media/types';
import type { TtsAudio } from '../tts/provider';
import type { Logger } from '../logger';

/** What the core needs of text-to-speech: the TTS layer's speak(), errors already typed. */
export interface TextToSpeech {
  /** Throws InvalidParameter/TextTooLong for text that can never be spoken. */
  validate(text: string): void;
  speak(text: string): Promise<TtsAudio>;
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
  readonly selection: Selection;
  readonly playback: PlaybackEngine;
  readonly volume: VolumeControl;
  readonly catalog: MediaCatalog;
  private readonly mediaHost: MediaHost;
  private readonly tts: TextToSpeech;
  private readonly drivers: SpeakerDriver[] = [];

  constructor(options: HubCoreOptions) {
    this.uuid = options.uuid;
    this.clock = options.clock;
    this.logger = options.logger;
    this.catalog = options.catalog;
    this.mediaHost = options.mediaHost;
    this.tts = options.tts;
    this.events = new HubEventBus((err, event) =>
      options.logger.error({ event, err: err instanceof Error ? { message: err.message, stack: err.stack } : String(err) }, 'event listener failed'),
    );
    this.sessions = new SessionStore(options.clock, options.sessions);
    this.speakers = new SpeakerRegistry(this.events, options.logger);
    this.selection = new Selection(this.speakers, this.events);
    this.playback = new PlaybackEngine(this.speakers, this.selection, options.clock, this.events, options.logger);
    this.volume = new VolumeControl(this.speakers, options.logger);
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
      url: this.mediaHost.publish(item.file, item.contentType),
      contentType: item.contentType,
      title: item.title,
      duration: item.duration || undefined,
    };
  }

  webMedia(url: string): PlayableMedia {
    return { kind: 'web', url, title: url };
  }

  /** Checks a Text parameter against the configured limits, before any target is looked at. */
  validateText(text: string): void {
    this.tts.validate(text);
  }

  async ttsMedia(text: string): Promise<PlayableMedia> {
    const audio = await this.tts.speak(text);
    return {
      kind: 'tts',
      url: this.mediaHost.publish(audio.file, audio.contentType),
      contentType: audio.contentType,
      title: text,
      duration: audio.duration,
    };
  }
}
