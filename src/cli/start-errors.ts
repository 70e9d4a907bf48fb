import { ConfigError, type HubConfig } from '../hub-config';

/**
 * Start-up failures as one line that says what happened and how to fix it, naming the
 * flag (or config key) the user sets. Unknown errors keep their message (no stack: the log
 * has details at debug level).
 */
export function explainStartError(e: unknown, config: HubConfig): string {
  if (e instanceof ConfigError) return e.message;
  const err = e as NodeJS.ErrnoException & { address?: string; port?: number; hostname?: string };
  const isMedia = err.port !== undefined && err.port === config.mediaServer.port && err.port !== config.server.port;
  const portFlag = isMedia ? '--media-port (mediaServer.port)' : '--port (server.port)';
  const hostFlag = isMedia ? '--media-host (mediaServer.host)' : '--host (server.host)';
  const host = isMedia ? (config.mediaServer.host ?? '127.0.0.1') : config.server.host;
  const port = err.port ?? (isMedia ? config.mediaServer.port : config.server.port);
  if (/^network interface "/.test(String(err?.message))) {
    return `cannot start: ${err.message}; name one of them with --interface (network.interface), or leave it out to serve on loopback only.`;
  }
  switch (err.code) {
    case 'EADDRINUSE':
      return `cannot start: port ${port} on ${host} is in use (another SpeakerHub or program listens there); stop it or choose another port with ${portFlag}.`;
    case 'EACCES':
      return `cannot start: no permission to listen on port ${port}; ports below 1024 need privileges: choose a port from 1024 with ${portFlag}.`;
    case 'EADDRNOTAVAIL':
      return `cannot start: ${host} is not an address of this machine; use one of its addresses, 0.0.0.0 (all) or 127.0.0.1 with ${hostFlag}.`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
    case 'EAI_NONAME':
      return `cannot start: the host name ${err.hostname ?? host} does not resolve (${err.code}); use an address of this machine, 0.0.0.0 (all) or 127.0.0.1 with ${hostFlag}.`;
    default:
      return `cannot start: ${err?.message ?? String(e)}${err?.code && !String(err.message).includes(err.code) ? ` (${err.code})` : ''}`;
  }
}
