import { collect } from '../../util/flags';
import { defineDriver } from '../definition';
import { UpnpConfigSchema } from './config';

export const upnpDriver = defineDriver({
  name: 'upnp',
  summary: 'UPnP/DLNA MediaRenderers, found by SSDP on network.interface or given as description URLs',
  configKey: 'upnp',
  configSchema: UpnpConfigSchema,
  // Naming a renderer means that real speaker (and, without --drivers, not the demo ones).
  enabledBy: (part) => part.renderers.length > 0,
  flags: {
    register(hub) {
      hub
        .option('--renderer <url>', 'UPnP renderer description URL, for networks without multicast (repeatable)', collect)
        .option('--no-ssdp', 'no SSDP discovery: only the --renderer URLs');
    },
    toConfig(f) {
      const part: Record<string, unknown> = {};
      const labels: Record<string, string> = {};
      if (f.renderer !== undefined) {
        part.renderers = f.renderer;
        labels.renderers = '--renderer';
      }
      // --no-x flags are true unless given.
      if (f.ssdp === false) {
        part.ssdp = false;
        labels.ssdp = '--no-ssdp';
      }
      return { part, labels };
    },
  },
  load: async () => {
    const { UpnpDriver } = await import('./driver');
    return (part, deps) => {
      if (!deps.networkAddress && !deps.hub.mediaServer.host && !deps.hub.mediaServer.advertiseHost) {
        deps.logger.warn(
          'the upnp driver is on but neither network.interface nor mediaServer.host/advertiseHost is set: media URLs will point at 127.0.0.1, which no networked renderer can fetch',
        );
      }
      return new UpnpDriver({
        config: part,
        interfaceName: deps.interfaceName,
        address: deps.networkAddress,
        clock: deps.clock,
        logger: deps.logger,
        isHubMediaUrl: deps.isHubMediaUrl,
      });
    };
  },
});
