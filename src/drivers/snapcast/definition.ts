import { collect } from '../../util/flags';
import { defineDriver } from '../definition';
import { SnapcastConfigSchema } from './config';

export const snapcastDriver = defineDriver({
  name: 'snapcast',
  summary: 'Snapcast clients of one or more snapservers; the hub feeds the stream they play',
  configKey: 'snapcast',
  configSchema: SnapcastConfigSchema,
  enabledBy: (part) => part.servers.length > 0,
  flags: {
    register(hub) {
      hub.option('--snapcast <host:port>', 'snapserver JSON-RPC control address (repeatable; port 1705 by default)', collect);
    },
    toConfig: (f) =>
      f.snapcast === undefined
        ? { part: {}, labels: {} }
        : { part: { servers: f.snapcast }, labels: { servers: '--snapcast' } as Record<string, string> },
  },
  load: async () => {
    const { SnapcastDriver } = await import('./driver');
    return (part, deps) => {
      if (!part.servers.length) deps.logger.warn('the snapcast driver is on but snapcast.servers is empty: no Snapcast speakers will appear');
      const ffmpegPath = part.ffmpegPath ?? deps.hub.media?.ffmpegPath ?? 'ffmpeg';
      return new SnapcastDriver({ config: { ...part, ffmpegPath }, clock: deps.clock, logger: deps.logger });
    };
  },
});
