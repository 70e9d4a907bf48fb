import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

/**
 * Loopback and link-local addresses: the hub's own machine and the link it sits on. With
 * webMedia.refuseLocalAddresses on, MediaUrls pointing there are refused, so a client cannot
 * make the hub (or its virtual speakers) probe services on the hub's machine.
 */
export function isLocalAddress(address: string): boolean {
  const a = address.toLowerCase().replace(/^\[|\]$/g, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped) return isLocalAddress(mapped[1]);
  if (isIP(a) === 4) return /^127\./.test(a) || /^169\.254\./.test(a) || a === '0.0.0.0';
  if (isIP(a) === 6) return a === '::1' || a === '::' || /^fe[89ab][0-9a-f]:/.test(a);
  return false;
}

/**
 * True when the URL's host is, or resolves to, a loopback or link-local address. A name that
 * does not resolve counts as not local (the fetch fails on its own).
 */
export async function pointsAtLocalAddress(url: string): Promise<boolean> {
  let host: string;
  try {
    host = new URL(url).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  } catch {
    return false;
  }
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host)) return isLocalAddress(host);
  try {
    const all = await lookup(host, { all: true });
    return all.some((r) => isLocalAddress(r.address));
  } catch {
    return false;
  }
}
