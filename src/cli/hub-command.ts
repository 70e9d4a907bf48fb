import type { Command } from 'commander';
import { labelProblems, loadConfig, mergeConfig } from '../config/load';
import { ConfigError, type HubConfig } from '../hub-config';
import { SpeakerHub } from '../hub';
import { createLogger, prettyLogs } from '../logger';
import type { LogNames } from '../logging/pretty';
import { collect, intFlag } from '../util/flags';
import { DRIVER_NAMES } from '../drivers/registry';
import { bannerLines, ffmpegWarning } from './banner';
import { scanProgressLine } from './scan-progress';
import { EXIT_USAGE, type CommandRegistrar } from './program';
import { explainStartError } from './start-errors';
import { startupDone } from './heap';
import { stdoutIsServerLog } from './closed-pipe';

/**
 * Flags of `speakerhub hub` that drivers and front ends add (MQTT, …): the registrar adds
 * options to the command and returns how its parsed flags become configuration (only flags
 * actually given), with the flag name for each config key so errors name what the user typed.
 * Flags are only config: the hub itself starts the front ends its config turns on.
 */
export type HubOptionRegistrar = (hub: Command) => ((flags: Record<string, unknown>) => FlagConfig) | void;

export interface FlagConfig {
  overrides: Record<string, unknown>;
  /** Config key path → the flag that set it, e.g. { 'mqtt.url': '--mqtt' }. */
  labels?: Record<string, string>;
  /** What the CLI assumes beneath the config file, the environment and the flags (e.g. { mqtt: { enabled: true } }). */
  defaults?: Record<string, unknown>;
  /** Its lines for the start banner, once the hub runs (secrets only when `tty`). */
  banner?: (hub: SpeakerHub, options: { tty: boolean }) => string[];
}

export { intFlag };

interface HubFlags {
  config?: string;
  port?: number;
  host?: string;
  token?: string;
  auth?: boolean;
  media?: string[];
  samples?: boolean;
  data?: string;
  mediaHost?: string;
  mediaPort?: number;
  tts?: string;
  logLevel?: string;
  logFormat?: string;
  drivers?: string[];
  interface?: string;
}

/** Config key → flag, for the flags this command defines. */
const FLAG_OF: Record<string, [keyof HubFlags, string]> = {
  dataDir: ['data', '--data'],
  drivers: ['drivers', '--drivers'],
  'network.interface': ['interface', '--interface'],
  'server.port': ['port', '--port'],
  'server.host': ['host', '--host'],
  'server.token': ['token', '--token'],
  'server.auth': ['auth', '--no-auth'],
  'mediaServer.host': ['mediaHost', '--media-host'],
  'mediaServer.port': ['mediaPort', '--media-port'],
  'media.folders': ['media', '--media'],
  'media.samples': ['samples', '--no-samples'],
  'tts.provider': ['tts', '--tts'],
  'log.level': ['logLevel', '--log-level'],
  'log.format': ['logFormat', '--log-format'],
};

/**
 * Flags win over the environment and the config file; only flags actually given override
 * anything. Drivers add their own flags (src/cli/driver-options.ts); naming a renderer or a
 * snapserver turns its driver on (src/drivers/registry.ts).
 */
function flagConfig(f: HubFlags): FlagConfig {
  const overrides = {
    dataDir: f.data,
    drivers: f.drivers,
    network: { interface: f.interface },
    server: { port: f.port, host: f.host, token: f.token, auth: f.auth === false ? false : undefined },
    mediaServer: { host: f.mediaHost, port: f.mediaPort },
    media: { folders: f.media, samples: f.samples === false ? false : undefined },
    tts: { provider: f.tts },
    log: { level: f.logLevel, format: f.logFormat },
  };
  const labels: Record<string, string> = {};
  for (const [key, [flag, name]] of Object.entries(FLAG_OF)) {
    const v = f[flag];
    // --no-x flags are true unless given.
    if (v !== undefined && !(name.startsWith('--no-') && v === true)) labels[key] = name;
  }
  return { overrides, labels };
}

/** The whole shutdown after SIGTERM/SIGINT, at most. */
const SHUTDOWN_LIMIT_MS = 15_000;

function fail(message: string): never {
  process.stderr.write(`speakerhub: ${message}\n`);
  process.exit(EXIT_USAGE);
}

async function runHub(flags: HubFlags, extra: FlagConfig[]): Promise<void> {
  const own = flagConfig(flags);
  const labels = Object.assign({}, own.labels, ...extra.map((x) => x.labels ?? {}));
  let overrides = own.overrides;
  let defaults: Record<string, unknown> = {};
  for (const x of extra) {
    overrides = mergeConfig(overrides, x.overrides);
    defaults = mergeConfig(defaults, x.defaults ?? {});
  }
  let config: HubConfig;
  try {
    config = await loadConfig(flags.config, overrides, { labels, defaults });
  } catch (e) {
    fail(e instanceof ConfigError ? e.message : (e as Error).message);
  }
  const names: LogNames = {};
  const logger = createLogger({ level: config.log.level, format: config.log.format, names });
  const wildcard = ['0.0.0.0', '::'].includes(config.server.host);
  if (!config.server.auth && wildcard && config.server.enabled) {
    const warning = `authentication is OFF and the REST server listens on ${config.server.host}: anyone on your network can control the speakers. Use --host 127.0.0.1, or drop --no-auth.`;
    process.stderr.write(`speakerhub: warning: ${warning}\n`);
    logger.warn(warning);
  }
  // The hub composes its front ends from the config (src/front-ends.ts), as an embedded hub does.
  let hub: SpeakerHub;
  try {
    hub = new SpeakerHub(config, {
      logger,
      onScanProgress: scanProgressLine(process.stderr),
    });
  } catch (e) {
    // A start-up error like any other (exit 2), e.g. --interface naming no interface of this machine.
    fail(explainStartError(e, config));
  }
  // Bound before start so that the start's own lines already name speakers (hub.core throws until then).
  const quiet = <T>(f: () => T): T | undefined => {
    try {
      return f();
    } catch {
      return undefined;
    }
  };
  names.device = (id) => quiet(() => hub.core.speakers.find(id)?.info().name);
  names.media = (id) => quiet(() => hub.library.get(id)?.title);
  // Signals are handled from before the start: one arriving while the hub starts waits for
  // the start to finish (or fail) and then shuts down cleanly; SIGHUP never kills.
  const run: { started?: Promise<boolean> } = {};
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    void (run.started ?? Promise.resolve(true)).then((ok) => {
      if (!ok) return;
      hub.logger.info({ signal }, 'shutting down');
      // Every part bounds its own goodbyes; this is the last resort against a part that hangs
      // (a stalled peer): the process exits anyway, and says so.
      const deadline = setTimeout(() => {
        hub.logger.error({ seconds: SHUTDOWN_LIMIT_MS / 1000 }, 'shutdown did not finish in time; exiting anyway');
        process.exit(1);
      }, SHUTDOWN_LIMIT_MS);
      deadline.unref();
      hub.stop().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    });
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  // SIGHUP (a closed terminal, `systemctl reload`): reload what can change without a restart
  // — the media folders and the API token file — and keep running.
  process.on('SIGHUP', () => {
    if (stopping || !run.started) return;
    void run.started.then((ok) => {
      if (!ok || stopping) return;
      hub.logger.info({ signal: 'SIGHUP' }, 'reloading: media folders and API token file');
      hub.reload().catch((e: unknown) => hub.logger.warn({ err: e }, 'reload failed'));
    });
  });

  run.started = hub.start().then(
    () => true,
    (e: unknown) => {
      logger.debug({ err: e }, 'start failed');
      fail(explainStartError(e instanceof ConfigError ? labelProblems(e, labels) : e, config));
    },
  );
  const started = await run.started;
  // Start-up is over either way: V8's optimizing compiler is back on (src/cli/heap.ts).
  void startupDone();
  if (!started || stopping) return;
  const noFfmpeg = ffmpegWarning(hub);
  if (noFfmpeg) hub.logger.warn(noFfmpeg);
  const tty = process.stdout.isTTY === true;
  // On a terminal with pretty logs the banner goes first and stands out; otherwise it is plain lines on stdout.
  const banner = [...bannerLines(hub, { tty }), ...extra.flatMap((x) => x.banner?.(hub, { tty }) ?? [])];
  process.stdout.write(`${banner.join('\n')}\n`);
  if (!prettyLogs(config.log.format) && tty) process.stdout.write('  (logs follow as JSON: --log-format pretty for readable ones)\n');
}

/** Registers `speakerhub hub`; the option registrars add drivers' and front ends' flags to it. */
export function hubCommand(optionRegistrars: readonly HubOptionRegistrar[]): CommandRegistrar {
  return (program) => {
    const cmd = program
      .command('hub')
      .description('Start the hub with its local REST server.')
      .option('-c, --config <file>', 'JSON config file')
      .option('-p, --port <port>', 'REST server port (default 8090)', intFlag('--port', 0, 65535))
      .option('--host <address>', 'REST server bind address (default 0.0.0.0)')
      .option('--token <token>', 'API bearer token (default: generated once, kept in the data folder)')
      .option('--no-auth', 'turn bearer authentication off (trusted LANs only)')
      .option('-m, --media <dir>', 'media folder to scan (repeatable)', collect)
      .option('--no-samples', 'do not generate the sample tracks')
      .option('-d, --data <dir>', 'data folder (default ~/.speakerhub)')
      .option('--media-host <address>', 'media server bind address (default 127.0.0.1)')
      .option('--media-port <port>', 'media server port (default: any free port)', intFlag('--media-port', 0, 65535))
      .option('--drivers <list>', `speaker drivers, comma-separated: ${DRIVER_NAMES.join(', ')} (default virtual)`, (v: string) =>
        v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      )
      .option('-i, --interface <name>', 'network interface for SSDP discovery and media serving (e.g. eth0)')
      .option('--tts <provider>', 'text-to-speech provider: espeak (default), festival or voicerss')
      .option('--log-level <level>', 'fatal, error, warn, info, debug, trace or silent')
      .option('--log-format <format>', 'json, pretty, or auto (default: pretty on a terminal, JSON otherwise)');
    const mappers = optionRegistrars.map((r) => r(cmd)).filter((m): m is (flags: Record<string, unknown>) => FlagConfig => typeof m === 'function');
    cmd.action(async (flags: HubFlags) => {
      stdoutIsServerLog();
      await runHub(
        flags,
        mappers.map((m) => m(flags as Record<string, unknown>)),
      );
    });
  };
}
