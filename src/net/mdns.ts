import { Bonjour, type Service } from 'bonjour-service';
import type { Logger } from '../logger';

/**
 * mDNS/DNS-SD advertising of one service on one network interface, shared by the front ends
 * and drivers that announce themselves (the ESPHome API's `_esphomelib._tcp`; AirPlay and
 * Cast can use it too). Only that interface's address is in the answers and only its
 * multicast group is joined, so nothing goes out on the host's other networks; stop() sends
 * the goodbye (TTL 0) and closes the socket.
 */
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
  // Bound to the wildcard (a socket bound to a unicast address receives no multicast on Linux);
  // membership and the sending interface are the configured interface's address alone.
  const bonjour = new Bonjour({ interface: o.address, bind: '0.0.0.0' } as never, (err: unknown) =>
    o.logger.warn({ err: String(err) }, 'mDNS error'),
  );
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
