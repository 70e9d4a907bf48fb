import { networkInterfaces } from 'node:os';

/**
 * Recognises the media server's capability URLs (`http://<host>:<port>/media/<22-char id>/<name>`)
 * of this hub, also those a previous run of it handed out: the port may differ between runs
 * (port 0 picks any), so only the host and the path form count. A renderer found playing such
 * a URL that no playback tracks was left behind by the hub (a crash, a dropped speaker).
 */
const CAPABILITY_PATH = /^\/media\/[A-Za-z0-9_-]{22}(?:\/[^/]*)?$/;

export interface MediaHostNames {
  /** mediaServer.host: the bind address (a wildcard stands for every local address). */
  bindHost?: string;
  /** mediaServer.advertiseHost. */
  advertiseHost?: string;
  /** The IPv4 address of network.interface. */
  networkAddress?: string;
}

export function hubMediaUrlMatcher(names: MediaHostNames): (url: string) => boolean {
  const hosts = new Set<string>(['127.0.0.1', 'localhost']);
  for (const h of [names.bindHost, names.advertiseHost, names.networkAddress]) if (h) hosts.add(h.toLowerCase());
  if (!names.bindHost || names.bindHost === '0.0.0.0' || names.bindHost === '::') {
    for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) hosts.add(a.address.toLowerCase());
  }
  return (url: string) => {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      return false;
    }
    return u.protocol === 'http:' && hosts.has(u.hostname.replace(/^\[|\]$/g, '').toLowerCase()) && CAPABILITY_PATH.test(u.pathname);
  };
}
