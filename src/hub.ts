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
import { MetadataReader } from './media/metadata-reader';
import { ensureChime } from './media/chime';
import { sampleMediaDir } from './media/sample-location';
import { loadOrCreateToken } from './server/auth';
import { RestServer } from './server/rest-server';
import { createTtsProvider, TtsService } from './tts/service';
import { VERSION } from './version';
import { interfaceAddress } from './net/interface-address';

export interface HubOptions {
  /** Time source; tests inject a ManualClock. */
  clock?: Clock;
  logger?: Logger;
  /** Extra drivers (beyond the configured ones), e.g. for embedding. */
  drivers?: SpeakerDriver[];
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
  /** The configured drivers (virtual, upnp, snapcast) and any extra ones, in start order. */
  readonly drivers: SpeakerDriver[];
  /** The virtual driver, when it runs (tests and demos drive its speakers' faults). */
  readonly virtual?: VirtualDriver;
  private _core?: HubCore;
  private rest?: RestServer;
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
      reader: this.metadata,
    });
    this.drivers = [
      ...createConfiguredDrivers(config, { clock: this.clock, logger: this.logger, version: VERSION, networkAddress: this.networkAddress }),
      ...(options.drivers ?? []),
    ];
    this.virtual = this.drivers.find((d): d is VirtualDriver => d instanceof VirtualDriver);
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

  /** Base URL of the local REST server, when it runs. */
  get url(): string | undefined {
    return this.rest?.url;
  }

  async start(): Promise<void> {
    const { config } = this;
    await mkdir(config.dataDir, { recursive: true });
    const folders = [...config.media.folders];
    if (config.media.samples) folders.push(await sampleMediaDir(config.dataDir));
    this._library = new MediaLibrary({ folders, logger: this.logger.child({ component: 'media' }), reader: this.metadata });
    await this._library.scan();
    await this.mediaServer.start();
    const core = new HubCore({
      uuid: await this.hubUuid(),
      clock: this.clock,
      logger: this.logger,
      catalog: this._library,
      mediaHost: this.mediaServer,
      tts: this.tts,
      sessions: { idleMs: config.sessions.idleMinutes * 60_000, maxSessions: config.sessions.maxSessions },
      chimeFile: await ensureChime(join(config.dataDir, 'chime-v1.wav')),
      partyRejoin: config.playback.partyRejoin,
    });
    this._core = core;
    for (const driver of this.drivers) await core.addDriver(driver);
    if (config.server.enabled) {
      if (config.server.auth) {
        const t = await loadOrCreateToken(config.dataDir, config.server.token);
        this._token = t.token;
        this._tokenGenerated = t.generated;
      }
      this.rest = new RestServer(core, {
        host: config.server.host,
        port: config.server.port,
        token: this._token,
        corsOrigin: config.server.corsOrigin,
        logger: this.logger,
        version: VERSION,
      });
      await this.rest.start();
    }
    this.logger.info(
      { speakers: core.speakers.size, media: this.library.list().length, url: this.rest?.url, auth: !!this._token },
      'hub started',
    );
  }

  async stop(): Promise<void> {
    // Playback first, while the front ends still run: their clients get the final state.
    await this._core?.playback.shutdown();
    await this.rest?.stop();
    this.rest = undefined;
    await this._core?.stop();
    await this.mediaServer.stop();
    this.metadata.close();
    this.logger.info('hub stopped');
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
