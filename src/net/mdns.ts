import { Bonjour, type Service } from 'bonjour-service';

export type { Service as MdnsService } from 'bonjour-service';
import type { Logger } from '../logger';

/**
 * mDNS/DNS-SD on one network interface, the one place the hub speaks it: advertising a service
 * (the ESPHome API's `_esphomelib._tcp`) and browsing for one (the AirPlay driver's
 * `_raop._tcp`; Cast can use both). Only that interface's multicast group is joined and only
 * its address is in the answers, so nothing goes out on the host's other networks; stop()
 * sends the goodbye (TTL 0) where there is one, and closes the socket.
 */

/** A Bonjour instance on one interface. */
function onInterface(address: string, logger: Logger): Bonjour {
  // Bound to the wildcard (a socket bound to a unicast address receives no multicast on Linux);
  // membership and the sending interface are the configured interface's address alone.
  return new Bonjour({ interface: address, bind: '0.0.0.0' } as never, (err: unknown) => logger.warn({ err: String(err) }, 'mDNS error'));
}

export interface BrowseOptions {
  /** The IPv4 address of the interface to browse on. */
  address: string;
  /** Service type without underscores or protocol: 'raop' → _raop._tcp. */
  type: string;
  /** How often to ask again (instances that come back answer). */
  requeryMs: number;
  logger: Logger;
  /** An instance announced itself (alive) or said goodbye (its TTL 0). */
  onChange: (service: Service, alive: boolean) => void;
}

/** Browses one service type on one interface until stop(). */
export function browse(o: BrowseOptions): { stop(): void } {
  const bonjour = onInterface(o.address, o.logger);
  const browser = bonjour.find({ type: o.type });
  browser.on('up', (s: Service) => o.onChange(s, true));
  browser.on('down', (s: Service) => o.onChange(s, false));
  const timer = setInterval(() => browser.update(), o.requeryMs);
  return {
    stop() {
      clearInterval(timer);
      browser.stop();
      bonjour.destroy();
    },
  };
}
export interface MdnsAdvertisement {
  /** The instance name as published (bonjour-service replaces dots with dashes). */
  readonly name: string;
  stop(): Promise<void>;
}

export interface AdvertiseOptions {
  /** The IPv4 address of the interface to advertise on (and the only address advertised). */
  address: string;
  /** Instance name (e.g. the device's hostname). */
  name: string;
  /** Service type without underscores or protocol: 'esphomelib' → _esphomelib._tcp. */
  type: string;
  port: number;
  txt: Record<string, string>;
  /** The SRV target host name; default `<name>.local`. */
  host?: string;
  logger: Logger;
}

export function advertise(o: AdvertiseOptions): MdnsAdvertisement {
  const bonjour = onInterface(o.address, o.logger);
  const service: Service = bonjour.publish({
    name: o.name,
    type: o.type,
    port: o.port,
    txt: o.txt,
    host: o.host ?? `${o.name}.local`,
    disableIPv6: true,
  });
  // bonjour-service answers with the address of every interface of the host; keep this one's.
  const all = service.records.bind(service);
  service.records = () => all().filter((r) => (r.type !== 'A' && r.type !== 'AAAA') || r.data === o.address);
  let stopped: Promise<void> | undefined;
  return {
    name: service.name,
    stop() {
      stopped ??= new Promise<void>((resolve) => {
        const done = () => {
          bonjour.destroy();
          resolve();
        };
        // The goodbye is one multicast packet; never wait long for it.
        const t = setTimeout(done, 1000);
        bonjour.unpublishAll(() => {
          clearTimeout(t);
          done();
        });
      });
      return stopped;
    },
  };
}
