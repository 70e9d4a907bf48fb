import { Bonjour, type Service } from 'bonjour-service';
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
 * Browses `_raop._tcp` by mDNS on network.interface only (the multicast socket is bound to its
 * address, so queries never go out on other interfaces). A receiver's goodbye marks it gone;
 * one that reappears (same MAC) is the same speaker.
 */
export function startDiscovery(opts: AirPlayDriverOptions, onFound: (r: FoundReceiver) => void): { stop(): void } {
  const log = opts.logger;
  if (!opts.networkAddress) {
    log.warn('airplay discovery needs network.interface (--interface): no mDNS browsing; give receivers with --airplay host:port');
    return { stop() {} };
  }
  // Bound to the wildcard (a socket bound to a unicast address receives no multicast on Linux);
  // membership and the sending interface are the configured interface's address alone.
  const bonjour = new Bonjour({ interface: opts.networkAddress, bind: '0.0.0.0' } as never, (err: unknown) =>
    log.warn({ err: String(err) }, 'airplay mDNS error'),
  );
  const browser = bonjour.find({ type: 'raop' });
  const report = (s: Service, alive: boolean) => {
    const { mac, name } = parseRaopName(s.name);
    const host = s.addresses?.find((a) => /^\d+\.\d+\.\d+\.\d+$/.test(a)) ?? s.referer?.address;
    if (!host || !s.port) return;
    onFound({ deviceId: mac ? `mac:${mac}` : `name:${s.name}`, mac, name, host, port: s.port, alive });
  };
  browser.on('up', (s) => report(s, true));
  browser.on('down', (s) => report(s, false));
  const timer = setInterval(() => browser.update(), REQUERY_MS);
  return {
    stop() {
      clearInterval(timer);
      browser.stop();
      bonjour.destroy();
    },
  };
}
