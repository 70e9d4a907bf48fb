import { BlockList, isIP } from 'node:net';

/**
 * Which proxies' X-Forwarded-For entries the cloud believes (`--trust-proxy`). A client can
 * write any X-Forwarded-For it likes; a proxy only appends the address it saw. So the
 * address of a request is read from the right: past the hops the operator named (a count),
 * or past the addresses the operator named (the balancers), never the client-written prefix.
 * (fastify's `trustProxy: true` takes the leftmost entry, which the client wrote: never used.)
 */
export type TrustProxy = { hops: number } | { addresses: string[] };

/** proxy-addr's named ranges, which fastify accepts as they are. */
const PRESETS: Record<string, string[]> = {
  loopback: ['127.0.0.1/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

export class TrustProxyError extends Error {}

/**
 * `--trust-proxy` as given: bare (true) is one hop, the balancer in front appending the
 * client's address; a number is that many hops; anything else a comma-separated list of
 * addresses, CIDRs or the names loopback, linklocal, uniquelocal.
 */
export function parseTrustProxy(v: boolean | number | string | string[] | undefined): TrustProxy | undefined {
  if (v === undefined || v === false) return undefined;
  if (v === true) return { hops: 1 };
  if (typeof v === 'number' || (typeof v === 'string' && /^\s*\d+\s*$/.test(v))) {
    const hops = Number(v);
    if (!Number.isSafeInteger(hops) || hops < 1 || hops > 10) throw new TrustProxyError('--trust-proxy takes a hop count from 1 to 10.');
    return { hops };
  }
  const list = (Array.isArray(v) ? v : v.split(',')).map((s) => s.trim()).filter(Boolean);
  if (!list.length) throw new TrustProxyError('--trust-proxy takes a hop count or a comma-separated list of proxy addresses or CIDRs.');
  for (const a of list)
    if (!PRESETS[a] && !validCidr(a))
      throw new TrustProxyError(`--trust-proxy: "${a}" is not an IP address, a CIDR or loopback/linklocal/uniquelocal.`);
  if (list.length > 256) throw new TrustProxyError('--trust-proxy takes at most 256 addresses.');
  return { addresses: list };
}

function validCidr(s: string): boolean {
  const [addr, bits, extra] = s.split('/');
  const family = isIP(addr);
  if (!family || extra !== undefined) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}

/** fastify's `trustProxy` for it: the hop count as proxy-addr's function, or the address list (never `true`). */
export function fastifyTrustProxy(t: TrustProxy | undefined): ((address: string, hop: number) => boolean) | string[] | false {
  if (!t) return false;
  if ('addresses' in t) return t.addresses;
  const hops = t.hops;
  return (_address, hop) => hop < hops;
}

/**
 * Whether a connection comes from a trusted proxy (its per-address connection cap is the
 * balancer's business). With a hop count every peer is taken for the balancer.
 */
export function isTrustedProxy(t: TrustProxy | undefined): (address: string) => boolean {
  if (!t) return () => false;
  if ('hops' in t) return () => true;
  const list = new BlockList();
  for (const entry of t.addresses.flatMap((a) => PRESETS[a] ?? [a])) {
    const [addr, bits] = entry.split('/');
    const type = isIP(addr) === 6 ? 'ipv6' : 'ipv4';
    if (bits === undefined) list.addAddress(addr, type);
    else list.addSubnet(addr, Number(bits), type);
  }
  return (address) => {
    const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
    if (v4) return list.check(v4, 'ipv4') || list.check(address, 'ipv6');
    return list.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
  };
}
