import { BlockList, isIP } from 'node:net';
import { z } from 'zod';

/**
 * Which LAN hosts a token-less server (DLNA, SlimProto) answers: addresses and subnets in
 * CIDR notation ("192.168.1.0/24", "192.168.1.20", "fd00::/8"). An empty list means any
 * host (the default: these protocols have no way to carry the API token, and the players
 * and control points that speak them are wherever the LAN puts them).
 */

const CIDR = /^([^/]+?)(?:\/(\d{1,3}))?$/;

function parseEntry(entry: string): { address: string; family: 'ipv4' | 'ipv6'; prefix?: number } | undefined {
  const m = CIDR.exec(entry.trim());
  if (!m) return undefined;
  const v = isIP(m[1]);
  if (!v) return undefined;
  const prefix = m[2] === undefined ? undefined : Number(m[2]);
  if (prefix !== undefined && prefix > (v === 4 ? 32 : 128)) return undefined;
  return { address: m[1], family: v === 4 ? 'ipv4' : 'ipv6', prefix };
}

/** Config: a list of addresses or CIDR subnets, each checked when the config is read. */
export const AllowListSchema = z
  .array(
    z
      .string()
      .trim()
      .refine((s) => parseEntry(s) !== undefined, { message: 'an IPv4/IPv6 address or CIDR subnet, e.g. "192.168.1.0/24"' }),
  )
  .max(256)
  .default([]);

export class AllowList {
  private readonly list = new BlockList();
  readonly any: boolean;

  constructor(readonly entries: readonly string[]) {
    this.any = entries.length === 0;
    for (const e of entries) {
      const p = parseEntry(e);
      if (!p) throw new Error(`not an address or CIDR subnet: ${JSON.stringify(e)}`);
      if (p.prefix === undefined) this.list.addAddress(p.address, p.family);
      else this.list.addSubnet(p.address, p.prefix, p.family);
    }
  }

  /** Whether a peer at that address may talk to the server (IPv4-mapped IPv6 counts as IPv4). */
  allows(address: string | undefined): boolean {
    if (this.any) return true;
    if (!address) return false;
    const a = address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
    const v = isIP(a);
    if (!v) return false;
    return this.list.check(a, v === 4 ? 'ipv4' : 'ipv6');
  }

  /** For banners and logs: "any LAN host" or the list. */
  describe(): string {
    return this.any ? 'any host' : this.entries.join(', ');
  }
}
