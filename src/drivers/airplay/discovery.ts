import { browse, type MdnsService } from '../../net/mdns';
import type { AirPlayDriverOptions } from './driver';

export interface FoundReceiver {
  /** Stable across restarts and address changes: the MAC of the `MAC@Name` instance name. */
  deviceId: string;
  mac: string;
  name: string;
  host: string;
  port: number;
  alive: boolean;
}

/** How often the browser asks again (receivers that come back answer). */
const REQUERY_MS = 10_000;

/** RAOP instance names are `<12 hex digits MAC>@<name>`. */
export function parseRaopName(instance: string): { mac: string; name: string } {
  const m = /^([0-9A-Fa-f]{12})@(.+)$/.exec(instance);
  if (!m) return { mac: '', name: instance };
  const mac = m[1].toUpperCase().match(/../g)!.join(':');
  return { mac, name: m[2] };
}

/**
 * Browses `_raop._tcp` by mDNS on network.interface only (src/net/mdns: queries never go out
 * on other interfaces). A receiver's goodbye marks it gone;
 * one that reappears (same MAC) is the same speaker.
 */
export function startDiscovery(opts: AirPlayDriverOptions, onFound: (r: FoundReceiver) => void): { stop(): void } {
  const log = opts.logger;
  if (!opts.networkAddress) {
    log.warn('airplay discovery needs network.interface (--interface): no mDNS browsing; give receivers with --airplay host:port');
    return { stop() {} };
  }
  const report = (s: MdnsService, alive: boolean) => {
    const { mac, name } = parseRaopName(s.name);
    const host = s.addresses?.find((a) => /^\d+\.\d+\.\d+\.\d+$/.test(a)) ?? s.referer?.address;
    if (!host || !s.port) return;
    onFound({ deviceId: mac ? `mac:${mac}` : `name:${s.name}`, mac, name, host, port: s.port, alive });
  };
  return browse({ address: opts.networkAddress, type: 'raop', requeryMs: REQUERY_MS, logger: log, onChange: report });
}
