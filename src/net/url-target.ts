import { networkInterfaces } from 'node:os';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { isLocalAddress } from './local-address';

/**
 * Where a URL handed in by a token-less LAN client (DLNA's SetAVTransportURI, ESPHome's
 * play_media) points (issue 32): the hub fetches such URLs later, so without a check any LAN
 * host could point one at http://127.0.0.1:<port>/… and probe services that listen only on
 * the hub's machine (a blind SSRF). "The hub's machine" is loopback, link-local,
 * 0.0.0.0 / :: and every address of this machine's interfaces.
 *
 * A name is resolved once here; the fetch resolves again, so a name that changes between the
 * two (DNS rebinding) is not covered: webMedia.refuseLocalAddresses checks at fetch time.
 */

/** Without brackets, lower case, IPv4-mapped IPv6 as IPv4, no zone (fe80::1%eth0). */
function normalize(address: string): string {
  return address
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/%.*$/, '')
    .replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '');
}

/** Every address of this machine's interfaces (read on each check: interfaces come and go). */
function ownAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) out.add(normalize(a.address));
  return out;
}

/** The URL's host, or undefined when it is not a URL. */
function hostOf(url: string): string | undefined {
  try {
    return normalize(new URL(url).hostname);
  } catch {
    return undefined;
  }
}

/** The addresses of the host that are on the hub's machine (empty when none is, or the name does not resolve). */
async function hubMachineAddressesOf(host: string): Promise<string[]> {
  const h = normalize(host);
  if (h === 'localhost' || h.endsWith('.localhost')) return ['127.0.0.1'];
  let addresses = [h];
  if (!isIP(h)) {
    try {
      addresses = (await lookup(h, { all: true })).map((r) => normalize(r.address));
    } catch {
      return []; // a name that does not resolve fails at the fetch on its own
    }
  }
  const own = ownAddresses();
  return addresses.filter((a) => isLocalAddress(a) || own.has(a));
}

/** The host is, or resolves to, loopback, link-local or one of this machine's addresses. */
export async function isHubMachine(host: string): Promise<boolean> {
  return (await hubMachineAddressesOf(host)).length > 0;
}

/** The URL's host is on the hub's machine (see isHubMachine); false for what is not a URL. */
export async function pointsAtHubMachine(url: string): Promise<boolean> {
  const host = hostOf(url);
  return host !== undefined && (await isHubMachine(host));
}

/**
 * A peer at this address runs on the hub's machine: loopback or one of its interface
 * addresses (a link-local peer is on the link, not necessarily this machine).
 */
export function isOnHubMachine(address: string | undefined): boolean {
  if (!address) return false;
  const a = normalize(address);
  return a === '::1' || a.startsWith('127.') || ownAddresses().has(a);
}

/**
 * Whether a URL from the client at `client` is refused: it points at the hub's machine,
 * unless
 *  - the client itself runs on the hub's machine (Home Assistant beside the hub hands URLs at
 *    127.0.0.1 or the machine's address to media it proxies; it can reach those itself, so
 *    letting the hub fetch them gives it nothing new), or
 *  - every hub-machine address the host stands for is the client's own (a client handing
 *    its own link-local address).
 */
export async function refusesClientUrl(url: string, client: string | undefined): Promise<boolean> {
  const host = hostOf(url);
  if (host === undefined) return false; // not a URL: the caller's own check refuses it
  const hits = await hubMachineAddressesOf(host);
  if (hits.length === 0) return false;
  if (isOnHubMachine(client)) return false;
  const c = client ? normalize(client) : undefined;
  return !hits.every((a) => a === c);
}
