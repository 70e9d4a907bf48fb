import { networkInterfaces } from 'node:os';
import { isIP } from 'node:net';

/** How the hub's media server is reached (from the hub's config), for URLs handed to an MPD. */
export interface MediaRoute {
  /** True for URLs of the hub's own media server (src/media/capability-url.ts). */
  isHubMediaUrl(url: string): boolean;
  /** mediaServer.host (the bind address), network.interface's address, mediaServer.advertiseHost. */
  bindHost?: string;
  networkAddress?: string;
  advertiseHost?: string;
}

/** A play on an MPD that cannot fetch the hub's media (it is served on loopback only): says how to fix it. */
export class MpdMediaUnreachable extends Error {
  readonly code = 'MpdMediaUnreachable';
}

const WILDCARD = new Set(['0.0.0.0', '::']);

export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.toLowerCase().replace(/^::ffff:/, '');
  return a === 'localhost' || a === '::1' || /^127\./.test(a);
}

/** True when the user chose where media URLs point (an interface or an advertised host): the hub leaves them alone. */
export function mediaHostChosen(route: Omit<MediaRoute, 'isHubMediaUrl'>): boolean {
  return Boolean(route.networkAddress || route.advertiseHost || (route.bindHost && !isLoopback(route.bindHost)));
}

/** The interface a local address belongs to (for the message naming --interface). */
export function interfaceOf(address: string): string | undefined {
  const a = address.replace(/^::ffff:/, '');
  for (const [name, list] of Object.entries(networkInterfaces())) if (list?.some((x) => x.address === a)) return name;
  return undefined;
}

/**
 * The media URL as this MPD must get it. An MPD on another machine fetches the hub's media
 * itself, and a URL at 127.0.0.1 would make it fetch from its own machine (`CURL failed: Failed
 * to connect to 127.0.0.1`). Decision (docs/drivers/mpd.md): with no --interface and no advertiseHost,
 * - a media server listening on every address (--media-host 0.0.0.0) is reached at the hub's
 *   own address on the route to this MPD (the local end of the hub's connection to it), which
 *   is right even on a machine with several networks;
 * - a media server on loopback only (the default) cannot be reached from there: the play fails
 *   at once naming the interface to give (--interface), instead of every play failing in MPD.
 * A URL that is not the hub's, or an MPD on this machine, is left as it is.
 */
export function urlForMpd(url: string, addresses: { local?: string; remote?: string }, route: MediaRoute, server: string): string {
  if (!route.isHubMediaUrl(url) || isLoopback(addresses.remote) || route.networkAddress || route.advertiseHost) return url;
  const local = addresses.local?.replace(/^::ffff:/, '');
  if (route.bindHost && WILDCARD.has(route.bindHost) && local) {
    const u = new URL(url);
    u.hostname = isIP(local) === 6 ? `[${local}]` : local;
    return u.toString();
  }
  const u = new URL(url);
  if (!isLoopback(u.hostname.replace(/^\[|\]$/g, ''))) return url;
  const iface = local ? interfaceOf(local) : undefined;
  throw new MpdMediaUnreachable(
    `MPD ${server} is on another machine and cannot fetch the hub's media at ${u.hostname} (the media server listens on loopback only): ` +
      `start the hub with --interface ${iface ?? '<the interface that reaches it>'}${local ? ` (this machine reaches it from ${local})` : ''}, or --media-host 0.0.0.0`,
  );
}
