import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import type { SpeakerHub } from '../hub';
import { VERSION } from '../version';
import { FFMPEG_DRIVERS, findProgram } from '../util/find-program';

/** The non-internal IPv4 addresses other machines on the LAN may reach the hub at. */
export function lanAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .filter((a) => a && a.family === 'IPv4' && !a.internal)
    .map((a) => a!.address);
}

const WILDCARD = new Set(['0.0.0.0', '::', '']);

/**
 * What the terminal shows at start. The API token is a secret: it is printed only to a
 * terminal; anywhere else (journald, docker logs, a file) the banner names the token file.
 */
export function bannerLines(hub: SpeakerHub, options: { tty: boolean }): string[] {
  const { config } = hub;
  const lines = [`SpeakerHub ${VERSION} is running.`];
  if (hub.url) {
    lines.push(`  REST API:   ${hub.url}/api/v1/`);
    if (WILDCARD.has(config.server.host)) {
      const port = new URL(hub.url).port;
      for (const a of lanAddresses()) lines.push(`              http://${a}:${port}/api/v1/   (LAN)`);
    }
    // The browser page (web/client) is served at / of the same port: the easiest way in for a person.
    lines.push(`  Web page:   ${hub.url}/   (speakers, play, volume, announce; sign in with the API token)`);
    const file = join(config.dataDir, 'api-token');
    if (!hub.token) lines.push('  API token:  none — authentication is OFF (server.auth=false)');
    else if (!options.tty)
      lines.push(`  API token:  not shown (not a terminal); it is in ${config.server.token ? 'the configuration (server.token)' : file}`);
    else lines.push(`  API token:  ${hub.token}${hub.tokenGenerated ? '   (new; saved in ' + file + ')' : ''}`);
  }
  const speakers = hub.core.speakers.all();
  const virtual = hub.driver('virtual')?.speakers().length ?? 0;
  lines.push(
    `  Speakers:   ${speakers.length}${virtual ? ` (${virtual === speakers.length ? 'all ' : ''}${virtual} virtual: silent test speakers)` : ''}`,
  );
  if (virtual && virtual === speakers.length) {
    lines.push('              Real speakers: --drivers upnp --interface eth0 (UPnP/DLNA), --renderer <url>, --snapcast <host> (Snapcast),');
    lines.push('                             --mpd <host:port> (MPD), --airplay <host:port> (AirPlay), --drivers squeezebox (Squeezebox)');
  }
  const missing = ffmpegWarning(hub);
  if (missing) lines.push(`  Warning:    ${missing}`);
  lines.push(`  Media:      ${hub.library.list().length} items`);
  if (hub.url) {
    // The CLI looks for a hub at port 8090 unless told: on another port the hint says where.
    const at = new URL(hub.url).port === '8090' ? '' : ` --url ${hub.url}`;
    lines.push(`  Try:        speakerhub speakers${at}      speakerhub say "Hello"${at}      speakerhub --help`);
  }
  return lines;
}

const FAMILY: Record<(typeof FFMPEG_DRIVERS)[number], string> = {
  squeezebox: 'Squeezebox players',
  snapcast: 'Snapcast clients',
  airplay: 'AirPlay speakers',
};

/** Drivers that decode with ffmpeg are on and ffmpeg is not on PATH: what cannot play, and the fix (else undefined). */
export function ffmpegWarning(hub: Pick<SpeakerHub, 'driver'>, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const on = FFMPEG_DRIVERS.filter((d) => hub.driver(d));
  if (!on.length || findProgram('ffmpeg', env)) return undefined;
  return `ffmpeg is not installed: ${on.map((d) => FAMILY[d]).join(', ')} cannot play anything until it is (sudo apt install ffmpeg)`;
}
