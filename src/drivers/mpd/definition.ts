import { collect } from '../../util/flags';
import { defineDriver } from '../definition';
import { MpdConfigSchema, resolveMpdServers } from './config';
import { isLoopback, mediaHostChosen } from './media-route';

export const mpdDriver = defineDriver({
  name: 'mpd',
  summary: 'MPD (Music Player Daemon) servers, each one speaker; their own queue is put back after announcements',
  configKey: 'mpd',
  configSchema: MpdConfigSchema,
  enabledBy: (part) => part.servers.length > 0,
  flags: {
    register(hub) {
      hub.option('--mpd <host:port>', 'MPD server address (repeatable; port 6600 by default)', collect);
    },
    toConfig: (f) =>
      f.mpd === undefined ? { part: {}, labels: {} } : { part: { servers: f.mpd }, labels: { servers: '--mpd' } as Record<string, string> },
  },
  load: async () => {
    const { MpdDriver } = await import('./driver');
    return (part, deps) => {
      if (!part.servers.length) deps.logger.warn('the mpd driver is on but mpd.servers is empty: no MPD speakers will appear');
      const route = {
        isHubMediaUrl: deps.isHubMediaUrl,
        bindHost: deps.hub.mediaServer.host,
        networkAddress: deps.networkAddress,
        advertiseHost: deps.hub.mediaServer.advertiseHost,
      };
      const remote = resolveMpdServers(part).filter((s) => !isLoopback(s.host));
      if (remote.length && !mediaHostChosen(route) && route.bindHost !== '0.0.0.0' && route.bindHost !== '::') {
        // As the UPnP driver warns: the URLs would point at 127.0.0.1 (each speaker names the interface once connected).
        deps.logger.warn(
          `the mpd driver has servers on other machines (${remote.map((s) => s.address).join(', ')}) but neither --interface nor --media-host/mediaServer.advertiseHost is set: the media server listens on 127.0.0.1, which they cannot fetch from; plays of the hub's media on them fail until you set --interface`,
        );
      }
      return new MpdDriver({ config: part, clock: deps.clock, logger: deps.logger, route });
    };
  },
});
