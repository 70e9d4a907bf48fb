import { randomUUID } from 'node:crypto';
import { watch } from 'node:fs';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { systemClock, type Clock } from './core/clock';
import { HubCore } from './core/hub-core';
import { ConfigError, parseConfig, type HubConfig, type HubConfigInput } from './hub-config';
import { createDrivers } from './drivers/registry';
import { frontEndExtensions } from './front-ends';
import { hubMediaUrlMatcher } from './media/capability-url';
import type { SpeakerDriver } from './drivers/driver';
import { createLogger, type Logger } from './logger';
import { MediaLibrary, type ScanProgress } from './media/library';
import { ArtworkCache } from './media/artwork';
import { MediaServer } from './media/media-server';
import type { LibraryAccess } from './media/types';
import { MetadataReader } from './media/metadata-reader';
import { ensureChime } from './audio/chime';
import { AnnouncementClips } from './media/announcement-clip';
import { LoudnessNormaliser } from './audio/loudness-file';
import { sampleMediaDir } from './media/sample-location';
import { SessionFile } from './persistence/session-file';
import { loadOrCreateToken } from './server/auth';
import { RestExtension } from './server/rest-extension';
import type { ExtensionContext, HubExtension } from './extensions/extension';
import { WireEventFeed } from './extensions/wire-events';
import { dispatch, runOperation } from './operations/dispatch';
import { createTtsProvider, TtsService } from './tts/service';
import { VERSION } from './version';
import { interfaceAddress } from './net/interface-address';

export interface HubOptions {
  /** Time source; tests inject a ManualClock. */
  clock?: Clock;
  logger?: Logger;
  /** Extra drivers (beyond the configured ones), e.g. for embedding. */
  drivers?: SpeakerDriver[];
  /**
   * Front ends beyond those the config turns on (src/front-ends.ts), started after them in
   * this order (see also use()). One named as a registered front end ('mqtt', 'dlna',
   * 'cloud-link') takes that front end's place.
   */
  extensions?: HubExtension[];
  /** How media scans get on (the CLI shows a progress line on a terminal while a large library is read). */
  onScanProgress?: (progress: ScanProgress) => void;
}

/**
 * A whole SpeakerHub: the core plus the pieces that feed it (media library, media server,
 * TTS, drivers) and, unless disabled, the local REST server. Embedders (Node-RED,
 * Homebridge) create one with createHub() and start/stop it with their own lifecycle.
 */
export class SpeakerHub {
  readonly config: HubConfig;
  readonly logger: Logger;
  readonly clock: Clock;
  private _library?: MediaLibrary;
  readonly mediaServer: MediaServer;
  readonly tts: TtsService;
  /** This hub's tag reader (a helper process while it has work): closed by this hub's stop only. */
  private readonly metadata = new MetadataReader();
  /** Drivers handed in by the embedder (options.drivers); the configured ones are created at start. */
  private readonly extraDrivers: SpeakerDriver[];
  private _drivers: SpeakerDriver[] = [];
  private readonly onScanProgress?: (progress: ScanProgress) => void;
  private _core?: HubCore;
  private rest?: RestExtension;
  private feed?: WireEventFeed;
  private readonly extensions: HubExtension[];
  /** The extensions this start runs (REST, the config's front ends, the embedder's), in start order. */
  private running: HubExtension[] = [];
  /** Undo steps of what start() has done so far, run in reverse by stop() or a failed start. */
  private undo: { what: string; run: () => Promise<void> | void }[] = [];
  private _token: string | null = null;
  private _tokenGenerated = false;
  /** IPv4 address of network.interface, when one is configured. */
  readonly networkAddress?: string;

  constructor(config: HubConfig, options: HubOptions = {}) {
    this.config = config;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? createLogger({ level: config.log.level });
    // Real speakers fetch media from the hub: on a configured interface, serve there.
    this.networkAddress = config.network.interface ? interfaceAddress(config.network.interface) : undefined;
    this.mediaServer = new MediaServer({
      host: config.mediaServer.host ?? this.networkAddress ?? '127.0.0.1',
      port: config.mediaServer.port,
      advertiseHost: config.mediaServer.advertiseHost,
      logger: this.logger.child({ component: 'media-server' }),
      maxConnections: config.limits.mediaMaxConnections,
      maxConnectionsPerAddress: config.limits.mediaMaxConnectionsPerAddress,
      sendTimeoutMs: config.limits.mediaSendTimeoutSeconds * 1000,
      releaseGraceMs: config.limits.mediaUrlGraceSeconds * 1000,
    });
    this.tts = new TtsService({
      provider: createTtsProvider(config.tts),
      cacheDir: join(config.dataDir, 'tts-cache'),
      voice: config.tts.voice,
      maxTextLength: config.tts.maxTextLength,
      maxCacheEntries: config.tts.maxCacheEntries,
      maxCacheBytes: config.limits.ttsCacheMB * 1024 * 1024,
      maxQueue: config.limits.ttsQueue,
      logger: this.logger.child({ component: 'tts' }),
      reader: this.metadata,
      // Speech enters the cache at the announcement loudness: a cached text plays with no loudness work.
      normaliser:
        config.announcements.loudness === 'off'
          ? undefined
          : new LoudnessNormaliser({ target: { integrated: config.announcements.loudness, truePeak: config.announcements.truePeak } }),
    });
    this.extraDrivers = [...(options.drivers ?? [])];
    this.extensions = [...(options.extensions ?? [])];
    this.onScanProgress = options.onScanProgress;
  }

  /** Adds a front end; it starts with the hub, after the REST server, the config's front ends and the ones added before. */
  use(extension: HubExtension): this {
    if (this._core) throw new Error('extensions are added before start()');
    this.extensions.push(extension);
    return this;
  }

  get library(): MediaLibrary {
    if (!this._library) throw new Error('the hub is not started');
    return this._library;
  }

  get core(): HubCore {
    if (!this._core) throw new Error('the hub is not started');
    return this._core;
  }

  /** The REST API token, or null when authentication is off. */
  get token(): string | null {
    return this._token;
  }

  /** True when this start generated (and saved) a new token. */
  get tokenGenerated(): boolean {
    return this._tokenGenerated;
  }

  /** The running drivers: the configured ones (created at start), then the embedder's, in start order. */
  get drivers(): readonly SpeakerDriver[] {
    return this._drivers;
  }

  /** The first running driver with this name (tests and demos reach the virtual speakers' fault switches through it). */
  driver<T extends SpeakerDriver = SpeakerDriver>(name: string): T | undefined {
    return this._drivers.find((d) => d.name === name) as T | undefined;
  }

  /** Open wire-event subscriptions (SSE streams, bridges): for health reports and leak checks. */
  get eventSubscribers(): number {
    return this.feed?.size ?? 0;
  }

  /**
   * A running front end by name ('rest', 'mqtt', 'dlna', 'cloud-link' …): the instance itself
   * (a lazily loaded one once loaded), for its status; undefined when it does not run.
   */
  extension(name: string): HubExtension | undefined {
    const ext = this.running.find((x) => x.name === name);
    return (ext as { loaded?: HubExtension } | undefined)?.loaded ?? ext;
  }

  /** Base URL of the local REST server, when it runs. */
  get url(): string | undefined {
    return this.rest?.url;
  }

  /**
   * Starts, in order: media library and server, the core and its drivers, the REST server,
   * then the other extensions. If any step fails, what had started is stopped again in
   * reverse (no port stays bound, no driver runs), and the error is rethrown.
   */
  async start(): Promise<void> {
    if (this._core) throw new Error('the hub is already started');
    try {
      await this.startSteps();
    } catch (e) {
      await this.runUndo().catch(() => undefined);
      throw e;
    }
    const core = this.core;
    this.logger.info(
      {
        speakers: core.speakers.size,
        media: this.library.list().length,
        url: this.rest?.url,
        auth: !!this._token,
        extensions: this.running.map((x) => x.name),
      },
      'hub started',
    );
  }

  private async startSteps(): Promise<void> {
    const { config } = this;
    await mkdir(config.dataDir, { recursive: true });
    await checkMediaFolders(config.media.folders);
    this.undo.push({ what: 'metadata reader', run: () => this.metadata.close() });
    // A synthesis still running (festival can take seconds) is killed, not left to outlive the hub.
    this.undo.push({ what: 'text-to-speech', run: () => this.tts.close() });
    const folders = [...config.media.folders];
    const samples = config.media.samples ? await sampleMediaDir(config.dataDir) : undefined;
    if (samples) folders.push(samples);
    this._library = new MediaLibrary({
      folders,
      sampleFolder: samples,
      logger: this.logger.child({ component: 'media' }),
      reader: this.metadata,
      onProgress: this.onScanProgress,
    });
    await this._library.scan();
    if (config.media.watch) {
      this._library.watch({ debounceMs: config.media.watchDebounceMs });
      const library = this._library;
      this.undo.push({ what: 'media folder watcher', run: () => library.stopWatching() });
    }
    this.mediaServer.serveCatalog(this._library);
    await this.mediaServer.start();
    this.undo.push({ what: 'media server', run: () => this.mediaServer.stop() });
    const core = new HubCore({
      uuid: await this.hubUuid(),
      clock: this.clock,
      logger: this.logger,
      catalog: this._library,
      mediaHost: this.mediaServer,
      tts: this.tts,
      sessions: { idleMs: config.sessions.idleMinutes * 60_000, maxSessions: config.sessions.maxSessions },
      refuseLocalMediaUrls: config.webMedia.refuseLocalAddresses,
      chimeFile: await ensureChime(join(config.dataDir, 'chime-v1.wav')),
      partyRejoin: config.playback.partyRejoin,
      clips: new AnnouncementClips({
        cacheDir: join(config.dataDir, 'announce-cache'),
        ffmpegPath: config.media.ffmpegPath,
        logger: this.logger.child({ component: 'announce-audio' }),
        loudness:
          config.announcements.loudness === 'off' ? 'off' : { integrated: config.announcements.loudness, truePeak: config.announcements.truePeak },
        gapMs: config.announcements.chimeGapMs,
        maxCacheEntries: config.announcements.maxClipCacheEntries,
        maxCacheBytes: config.limits.ttsCacheMB * 1024 * 1024,
      }),
    });
    this._core = core;
    this.undo.push({
      what: 'core',
      run: async () => {
        this._core = undefined;
        await core.stop();
      },
    });
    if (config.sessions.persist) {
      // Sessions survive restarts: an automation's SessionToken stays valid until it expires.
      const file = new SessionFile(config.dataDir, core.sessions, this.logger);
      await file.load();
      this.undo.push({ what: 'session file', run: () => file.close() });
    }
    // Each configured driver's code is loaded only now: a hub without Snapcast never loads it.
    this._drivers = [
      ...(await createDrivers(config.drivers, config, {
        clock: this.clock,
        logger: this.logger,
        version: VERSION,
        networkAddress: this.networkAddress,
        interfaceName: config.network.interface,
        isHubMediaUrl: hubMediaUrlMatcher({
          bindHost: config.mediaServer.host ?? this.networkAddress,
          advertiseHost: config.mediaServer.advertiseHost,
          networkAddress: this.networkAddress,
        }),
        hub: config,
      })),
      ...this.extraDrivers,
    ];
    this.undo.push({ what: 'drivers', run: () => void (this._drivers = []) });
    for (const driver of this._drivers) await core.addDriver(driver);
    const feed = new WireEventFeed(
      core.events,
      () => core.playback.list(),
      (err) => this.logger.error({ err: err instanceof Error ? { message: err.message, stack: err.stack } : String(err) }, 'event subscriber failed'),
    );
    this.feed = feed;
    this.undo.push({ what: 'event feed', run: () => feed.close() });
    // The front ends the config names, each loaded only now (a hub without DLNA never loads it).
    const extensions = [...frontEndExtensions(config, this.extensions), ...this.extensions];
    if (config.server.enabled) {
      if (config.server.auth) {
        const t = await loadOrCreateToken(config.dataDir, config.server.token);
        this._token = t.token;
        this._tokenGenerated = t.generated;
      }
      this.rest = new RestExtension({
        host: config.server.host,
        port: config.server.port,
        token: this._token,
        corsOrigin: config.server.corsOrigin,
        logger: this.logger,
        version: VERSION,
        limits: {
          maxConnections: config.limits.maxConnections,
          maxConnectionsPerAddress: config.limits.maxConnectionsPerAddress,
          headersTimeoutMs: config.limits.headersTimeoutSeconds * 1000,
          requestTimeoutMs: config.limits.requestTimeoutSeconds * 1000,
          maxEventStreams: config.limits.maxEventStreams,
          eventStreamMaxQueued: config.limits.eventStreamMaxQueued,
          eventStreamBufferBytes: config.limits.eventStreamBufferKB * 1024,
          maxTextLength: config.tts.maxTextLength,
        },
      });
      extensions.unshift(this.rest);
    }
    for (const ext of extensions) {
      await ext.start(this.extensionContext(ext, core, feed));
      this.running.push(ext);
      this.undo.push({
        what: `extension ${ext.name}`,
        run: async () => {
          if (ext === this.rest) this.rest = undefined;
          this.running = this.running.filter((x) => x !== ext);
          await ext.stop();
        },
      });
    }
    if (this.rest && config.server.auth && !config.server.token) this.watchTokenFile();
  }

  /** `speakerhub token --rotate` replaces the token file; the running server switches to it. */
  private watchTokenFile(): void {
    let timer: NodeJS.Timeout | undefined;
    try {
      const watcher = watch(this.config.dataDir, { persistent: false }, (_event, name) => {
        if (name !== 'api-token') return;
        clearTimeout(timer);
        timer = setTimeout(() => void this.reloadToken().catch((e: unknown) => this.logger.warn({ err: e }, 'API token reload failed')), 100);
        timer.unref();
      });
      watcher.on('error', () => watcher.close());
      this.undo.push({
        what: 'token file watcher',
        run: () => {
          clearTimeout(timer);
          watcher.close();
        },
      });
    } catch (e) {
      this.logger.warn({ err: e }, 'cannot watch the API token file; a rotated token takes effect on SIGHUP');
    }
  }

  private async reloadToken(): Promise<void> {
    const { config } = this;
    if (!this.rest || !config.server.auth || config.server.token) return;
    const t = await loadOrCreateToken(config.dataDir);
    if (t.token === this._token) return;
    this.rest.setToken(t.token);
    this._token = t.token;
    this.logger.info('API token reloaded from the data folder');
  }

  private _libraryAccess?: LibraryAccess;

  /** The library for the DLNA MediaServer: one cover cache however many front ends ask. */
  private libraryAccess(): LibraryAccess | undefined {
    const catalog = this._library;
    if (!catalog) return undefined;
    if (!this._libraryAccess) {
      const media = this.mediaServer;
      const covers = new ArtworkCache(this.metadata);
      this._libraryAccess = {
        catalog,
        itemUrl: (item) => media.itemUrl(item),
        isItemUrl: (url) => media.isItemUrl(url),
        artwork: (item) => covers.get(item),
      };
    }
    return this._libraryAccess;
  }

  /** What a front end may use of the hub: dispatch, trusted sessions, wire events and the library. */
  private extensionContext(ext: HubExtension, core: HubCore, feed: WireEventFeed): ExtensionContext {
    const hub = this;
    return {
      uuid: core.uuid,
      config: this.config,
      logger: this.logger.child({ ext: ext.name }),
      version: VERSION,
      dispatch: async (operation, params) => dispatch(core, operation, params),
      run: (op, params, memo) => runOperation(core, op, params, memo),
      openTrustedSession: () => core.sessions.createTrusted(),
      library: this.libraryAccess(),
      subscribe: (handler, options) => feed.subscribe(handler, options),
      get httpServer() {
        return hub.rest?.httpServer;
      },
    };
  }

  /**
   * Reloads what can change while the hub runs (SIGHUP): rescans the media folders and
   * re-reads the API token file (after `speakerhub token --rotate`). The configuration
   * itself is read only at start.
   */
  async reload(): Promise<void> {
    await this._library?.rescan();
    await this.reloadToken();
  }

  /**
   * Stops everything that started, in reverse order. Every step runs even when one fails;
   * the failures are logged and rethrown together.
   */
  async stop(): Promise<void> {
    // Playback first, while the front ends still run: their clients get the final state
    // (the wire feed delivers on a later turn of the event loop, hence the wait).
    if (this._core) {
      await this._core.playback.shutdown().catch((e) => this.logger.warn({ err: String(e) }, 'stopping the playback at shutdown failed'));
      await new Promise((r) => setImmediate(r));
    }
    const errors = await this.runUndo();
    this.logger.info('hub stopped');
    if (errors.length) throw new AggregateError(errors, `hub stop: ${errors.length} step(s) failed`);
  }

  private async runUndo(): Promise<unknown[]> {
    const errors: unknown[] = [];
    while (this.undo.length) {
      const step = this.undo.pop()!;
      try {
        await step.run();
      } catch (e) {
        errors.push(e);
        this.logger.error({ step: step.what, err: e instanceof Error ? e.message : String(e) }, 'stop step failed');
      }
    }
    this.feed = undefined;
    return errors;
  }

  /** The hub's UUID (HKWHubUUID on the wire), made once and kept in the data folder. */
  private async hubUuid(): Promise<string> {
    const file = join(this.config.dataDir, 'hub-uuid');
    try {
      const saved = (await readFile(file, 'utf8')).trim();
      if (/^[0-9a-f-]{36}$/i.test(saved)) return saved;
    } catch {
      /* first start */
    }
    const uuid = randomUUID();
    await writeFile(file, `${uuid}\n`);
    return uuid;
  }
}

/**
 * A configured media folder that does not exist is a start error, not a log line: a typo in
 * --media would otherwise give an empty library with no visible reason. (A folder that
 * vanishes later, an unmounted share, is only rescanned as empty.)
 */
async function checkMediaFolders(folders: string[]): Promise<void> {
  const problems: string[] = [];
  for (const [i, folder] of folders.entries()) {
    try {
      if (!(await stat(folder)).isDirectory()) problems.push(`media.folders[${i}]: ${folder} is not a folder`);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      problems.push(
        `media.folders[${i}]: ${folder} ${code === 'ENOENT' ? 'does not exist; create it or fix the path (--media)' : `cannot be read (${code})`}`,
      );
    }
  }
  if (problems.length) throw new ConfigError(problems);
}

/** Validates the configuration and builds a hub; call start() to run it. */
export function createHub(config: HubConfigInput = {}, options: HubOptions = {}): SpeakerHub {
  return new SpeakerHub(parseConfig(config), options);
}
