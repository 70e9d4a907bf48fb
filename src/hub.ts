import { randomUUID } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { systemClock, type Clock } from './core/clock';
import { HubCore } from './core/hub-core';
import { parseConfig, type HubConfig, type HubConfigInput } from './config/schema';
import { VirtualDriver } from './drivers/virtual/virtual-driver';
import { createConfiguredDrivers } from './drivers/factory';
import type { SpeakerDriver } from './drivers/driver';
import { createLogger, type Logger } from './logger';
import { MediaLibrary } from './media/library';
import { MediaServer } from './media/media-server';
import { metadataReader } from './media/metadata-reader';
import { sampleMediaDir } from './media/sample-location';
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
  /** Front ends started after the REST server, in this order (see also use()). */
  extensions?: HubExtension[];
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
  /** The configured drivers (virtual, upnp, snapcast) and any extra ones, in start order. */
  readonly drivers: SpeakerDriver[];
  /** The virtual driver, when it runs (tests and demos drive its speakers' faults). */
  readonly virtual?: VirtualDriver;
  private _core?: HubCore;
  private rest?: RestExtension;
  private feed?: WireEventFeed;
  private readonly extensions: HubExtension[];
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
    });
    this.tts = new TtsService({
      provider: createTtsProvider(config.tts),
      cacheDir: join(config.dataDir, 'tts-cache'),
      voice: config.tts.voice,
      maxTextLength: config.tts.maxTextLength,
      maxCacheEntries: config.tts.maxCacheEntries,
      logger: this.logger.child({ component: 'tts' }),
    });
    this.drivers = [
      ...createConfiguredDrivers(config, { clock: this.clock, logger: this.logger, version: VERSION, networkAddress: this.networkAddress }),
      ...(options.drivers ?? []),
    ];
    this.virtual = this.drivers.find((d): d is VirtualDriver => d instanceof VirtualDriver);
    this.extensions = [...(options.extensions ?? [])];
  }

  /** Adds a front end; it starts with the hub, after the REST server and the ones added before. */
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

  /** Open wire-event subscriptions (SSE streams, bridges): for health reports and leak checks. */
  get eventSubscribers(): number {
    return this.feed?.size ?? 0;
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
      { speakers: core.speakers.size, media: this.library.list().length, url: this.rest?.url, auth: !!this._token, extensions: this.extensions.map((x) => x.name) },
      'hub started',
    );
  }

  private async startSteps(): Promise<void> {
    const { config } = this;
    await mkdir(config.dataDir, { recursive: true });
    this.undo.push({ what: 'metadata reader', run: () => metadataReader.close() });
    const folders = [...config.media.folders];
    if (config.media.samples) folders.push(await sampleMediaDir(config.dataDir));
    this._library = new MediaLibrary({ folders, logger: this.logger.child({ component: 'media' }) });
    await this._library.scan();
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
    });
    this._core = core;
    this.undo.push({
      what: 'core',
      run: async () => {
        this._core = undefined;
        await core.stop();
      },
    });
    for (const driver of this.drivers) await core.addDriver(driver);
    const feed = new WireEventFeed(core.events, () => core.playback.snapshot(), (err) =>
      this.logger.error({ err: err instanceof Error ? { message: err.message, stack: err.stack } : String(err) }, 'event subscriber failed'),
    );
    this.feed = feed;
    this.undo.push({ what: 'event feed', run: () => feed.close() });
    const extensions = [...this.extensions];
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
      });
      extensions.unshift(this.rest);
    }
    for (const ext of extensions) {
      await ext.start(this.extensionContext(ext, core, feed));
      this.undo.push({
        what: `extension ${ext.name}`,
        run: async () => {
          if (ext === this.rest) this.rest = undefined;
          await ext.stop();
        },
      });
    }
  }

  /** What a front end may use of the hub: dispatch, trusted sessions and wire events. */
  private extensionContext(ext: HubExtension, core: HubCore, feed: WireEventFeed): ExtensionContext {
    const hub = this;
    return {
      uuid: core.uuid,
      config: this.config,
      logger: this.logger.child({ ext: ext.name }),
      version: VERSION,
      dispatch: async (operation, params) => dispatch(core, operation, params),
      run: (op, params) => runOperation(core, op, params),
      openTrustedSession: () => core.sessions.createTrusted(),
      subscribe: (handler, options) => feed.subscribe(handler, options),
      get httpServer() {
        return hub.rest?.httpServer;
      },
    };
  }

  /**
   * Stops everything that started, in reverse order. Every step runs even when one fails;
   * the failures are logged and rethrown together.
   */
  async stop(): Promise<void> {
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

/** Validates the configuration and builds a hub; call start() to run it. */
export function createHub(config: HubConfigInput = {}, options: HubOptions = {}): SpeakerHub {
  return new SpeakerHub(parseConfig(config), options);
}
