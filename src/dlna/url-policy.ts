import { networkInterfaces } from 'node:os';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { isLocalAddress } from '../net/local-address';
import { UpnpError } from './soap';

/**
 * What a control point may make the hub fetch (issue 32 item 6). A URI handed over by
 * SetAVTransportURI is fetched by the hub (or its speakers) later: without this, any LAN host
 * could point it at http://127.0.0.1:<port>/… and probe services that listen only on the
 * hub's machine (a blind SSRF). Loopback, link-local and the hub's own interface addresses
 * are refused with 716 Resource not found unless dlna.allowLocalUrls.
 *
 * A name is resolved once here; the fetch resolves again, so a name that changes between
 * the two (DNS rebinding) is not covered: webMedia.refuseLocalAddresses checks at fetch time.
 */
export async function checkUrlTarget(url: string, allowLocal: boolean): Promise<void> {
  if (allowLocal || !url) return;
  let host: string;
  try {
    host = new URL(url).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  } catch {
    return; // checkUrl refused it already
  }
  if (await isHubMachine(host)) {
    throw new UpnpError(
      'ResourceNotFound',
      'refused: the URI points at the hub’s own machine (loopback, link-local or one of its addresses); dlna.allowLocalUrls allows it',
    );
  }
}

/** The host is, or resolves to, loopback, link-local or one of this machine's addresses. */
async function isHubMachine(host: string): Promise<boolean> {
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  let addresses = [host];
  if (!isIP(host)) {
    try {
      addresses = (await lookup(host, { all: true })).map((r) => r.address.toLowerCase());
    } catch {
      return false; // a name that does not resolve fails at the fetch on its own
    }
  }
  const own = ownAddresses();
  return addresses.some((a) => isLocalAddress(a) || own.has(a.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '')));
}

/** Every address of this machine's interfaces (read on each check: interfaces come and go). */
function ownAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) out.add(a.address.toLowerCase());
  return out;
}
