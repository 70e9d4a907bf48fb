import type { AirPlayDriverOptions } from './driver';

export interface FoundReceiver {
  deviceId: string;
  mac: string;
  name: string;
  host: string;
  port: number;
  alive: boolean;
}

/** mDNS browsing of `_raop._tcp` (not implemented yet: see README). */
export function startDiscovery(opts: AirPlayDriverOptions, _onFound: (r: FoundReceiver) => void): { stop(): void } {
  opts.logger.warn('airplay mDNS discovery is not implemented yet: give receivers with --airplay host:port');
  return { stop() {} };
}
