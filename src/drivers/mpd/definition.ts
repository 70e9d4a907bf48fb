import { collect } from '../../util/flags';
import { defineDriver } from '../definition';
import { MpdConfigSchema } from './config';

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
      return new MpdDriver({ config: part, clock: deps.clock, logger: deps.logger });
    };
  },
});
