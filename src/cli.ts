#!/usr/bin/env node
import { Command, InvalidArgumentError } from 'commander';
import { ConfigError } from './config/schema';
import { loadConfig } from './config/load';
import { SpeakerHub } from './hub';
import { createLogger } from './logger';
import { VERSION } from './version';
import { cloudExtensions, cloudOverrides, registerCloudCommands } from './cloud/cli';

function int(name: string, min: number, max: number) {
  return (v: string): number => {
    if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) throw new InvalidArgumentError(`${name} must be an integer from ${min} to ${max}.`);
    return Number(v);
  };
}

const collect = (v: string, acc: string[] = []): string[] => [...acc, v];

interface HubFlags {
  config?: string;
  port?: number;
  host?: string;
  token?: string;
  auth?: boolean;
  media?: string[];
  samples?: boolean;
  virtualSpeakers?: number;
  data?: string;
  mediaHost?: string;
  mediaPort?: number;
  tts?: 'espeak' | 'voicerss';
  logLevel?: string;
  drivers?: string[];
  interface?: string;
  renderer?: string[];
  ssdp?: boolean;
  snapcast?: string[];
}

/**
 * Flags win over the config file; only flags actually given override anything. Naming a
 * renderer or a snapserver without --drivers means those real speakers, not the demo ones.
 */
function overridesFrom(f: HubFlags): Record<string, unknown> {
  const implied = [...(f.renderer?.length ? ['upnp'] : []), ...(f.snapcast?.length ? ['snapcast'] : [])];
  return {
    dataDir: f.data,
    drivers: f.drivers ?? (implied.length ? implied : undefined),
    network: { interface: f.interface },
    upnp: { renderers: f.renderer, ssdp: f.ssdp === false ? false : undefined },
    snapcast: { servers: f.snapcast },
    server: { port: f.port, host: f.host, token: f.token, auth: f.auth === false ? false : undefined },
    mediaServer: { host: f.mediaHost, port: f.mediaPort },
    media: { folders: f.media, samples: f.samples === false ? false : undefined },
    speakers: { virtual: { count: f.virtualSpeakers } },
    tts: { provider: f.tts },
    log: { level: f.logLevel },
    cloud: cloudOverrides(f),
  };
}

async function runHub(flags: HubFlags): Promise<void> {
  const config = await loadConfig(flags.config, overridesFrom(flags));
  const hub = new SpeakerHub(config, { logger: createLogger({ level: config.log.level }), extensions: cloudExtensions(config) });
  await hub.start();
  // Printed to the terminal, never to the log: the token is a secret.
  const lines = [`SpeakerHub ${VERSION} is running.`, `  REST API:   ${hub.url}/api/v1/`];
  if (hub.token) lines.push(`  API token:  ${hub.token}${hub.tokenGenerated ? '   (new; saved in ' + config.dataDir + ')' : ''}`);
  else lines.push('  API token:  none — authentication is OFF (server.auth=false)');
  lines.push(`  Speakers:   ${hub.core.speakers.size}   Media items: ${hub.library.list().length}`);
  lines.push(`  Try:        curl -H "Authorization: Bearer ${hub.token ? '<token>' : ''}" ${hub.url}/api/v1/init_session`);
  process.stdout.write(`${lines.join('\n')}\n`);
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    hub.logger.info({ signal }, 'shutting down');
    hub.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

export function buildCli(): Command {
  const program = new Command('speakerhub').version(VERSION).description('SpeakerHub: control networked speakers and play audio on them.');
  program
    .command('hub')
    .description('Start the hub with its local REST server.')
    .option('-c, --config <file>', 'JSON config file')
    .option('-p, --port <port>', 'REST server port (default 8090)', int('--port', 0, 65535))
    .option('--host <address>', 'REST server bind address (default 0.0.0.0)')
    .option('--token <token>', 'API bearer token (default: generated once, kept in the data folder)')
    .option('--no-auth', 'turn bearer authentication off (trusted LANs only)')
    .option('-m, --media <dir>', 'media folder to scan (repeatable)', collect)
    .option('--no-samples', 'do not generate the sample tracks')
    .option('--virtual-speakers <n>', 'number of virtual speakers (default 3)', int('--virtual-speakers', 0, 10000))
    .option('-d, --data <dir>', 'data folder (default ~/.speakerhub)')
    .option('--media-host <address>', 'media server bind address (default 127.0.0.1)')
    .option('--media-port <port>', 'media server port (default: any free port)', int('--media-port', 0, 65535))
    .option('--drivers <list>', 'speaker drivers, comma-separated: virtual, upnp, snapcast (default virtual)', (v: string) => v.split(',').map((s) => s.trim()).filter(Boolean))
    .option('-i, --interface <name>', 'network interface for SSDP discovery and media serving (e.g. eth0)')
    .option('--renderer <url>', 'UPnP renderer description URL, for networks without multicast (repeatable)', collect)
    .option('--no-ssdp', 'no SSDP discovery: only the --renderer URLs')
    .option('--snapcast <host:port>', 'snapserver JSON-RPC control address (repeatable; port 1705 by default)', collect)
    .option('--tts <provider>', 'text-to-speech provider: espeak (default) or voicerss')
    .option('--log-level <level>', 'fatal, error, warn, info, debug, trace or silent')
    .action(async (flags: HubFlags) => {
      try {
        await runHub(flags);
      } catch (e) {
        process.stderr.write(`speakerhub: ${e instanceof ConfigError ? e.message : (e as Error).stack ?? String(e)}\n`);
        process.exit(2);
      }
    });
  registerCloudCommands(program, program.commands.find((c) => c.name() === 'hub'));
  return program;
}

if (require.main === module) {
  buildCli().parseAsync(process.argv);
}
