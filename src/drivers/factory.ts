import type { Clock } from '../core/clock';
import type { HubConfig } from '../config/schema';
import type { Logger } from '../logger';
import { hubMediaUrlMatcher } from '../media/capability-url';
import type { SpeakerDriver } from './driver';
import { SnapcastDriver } from './snapcast';
import { UpnpDriver } from './upnp';
import { VirtualDriver } from './virtual/virtual-driver';

export interface DriverDeps {
  clock: Clock;
  logger: Logger;
  version: string;
  /** IPv4 address of network.interface, when configured. */
  networkAddress?: string;
}

/** The drivers named in config.drivers, in that order. */
export function createConfiguredDrivers(config: HubConfig, deps: DriverDeps): SpeakerDriver[] {
  const drivers: SpeakerDriver[] = [];
  for (const name of config.drivers) {
    if (name === 'virtual' && config.speakers.virtual.count > 0) {
      drivers.push(
        new VirtualDriver({
          count: config.speakers.virtual.count,
          names: config.speakers.virtual.names,
          volume: config.speakers.virtual.volume,
          clock: deps.clock,
          version: deps.version,
          logger: deps.logger,
          refuseLocalAddresses: config.webMedia.refuseLocalAddresses,
        }),
      );
    } else if (name === 'upnp') {
      if (!deps.networkAddress && !config.mediaServer.host && !config.mediaServer.advertiseHost) {
        deps.logger.warn(
          'the upnp driver is on but neither network.interface nor mediaServer.host/advertiseHost is set: media URLs will point at 127.0.0.1, which no networked renderer can fetch',
        );
      }
      drivers.push(
        new UpnpDriver({
          config: config.upnp,
          interfaceName: config.network.interface,
          address: deps.networkAddress,
          clock: deps.clock,
          logger: deps.logger,
          isHubMediaUrl: hubMediaUrlMatcher({
            bindHost: config.mediaServer.host ?? deps.networkAddress,
            advertiseHost: config.mediaServer.advertiseHost,
            networkAddress: deps.networkAddress,
          }),
        }),
      );
    } else if (name === 'snapcast') {
      if (!config.snapcast.servers.length)
        deps.logger.warn('the snapcast driver is on but snapcast.servers is empty: no Snapcast speakers will appear');
      drivers.push(new SnapcastDriver({ config: config.snapcast, clock: deps.clock, logger: deps.logger }));
    }
  }
  return drivers;
}
