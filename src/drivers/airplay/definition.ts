import { collect } from '../../util/flags';
import { defineDriver } from '../definition';
import { AirPlayConfigSchema } from './config';

export const airplayDriver = defineDriver({
  name: 'airplay',
  summary: 'AirPlay 1 (RAOP) receivers (shairport-sync, AirPort Express, AV receivers); the hub streams to them in sync',
  configKey: 'airplay',
  configSchema: AirPlayConfigSchema,
  enabledBy: (part) => part.receivers.length > 0,
  flags: {
    register(hub) {
      hub.option('--airplay <host:port>', 'AirPlay (RAOP) receiver address (repeatable; port 5000 by default)', collect);
    },
    toConfig: (f) =>
      f.airplay === undefined
        ? { part: {}, labels: {} }
        : { part: { receivers: f.airplay }, labels: { receivers: '--airplay' } as Record<string, string> },
  },
  load: async () => {
    const { createAirPlayDriver } = await import('./driver');
    return (part, deps) => createAirPlayDriver(part, { ...deps, ffmpegPath: deps.hub.media?.ffmpegPath });
  },
});
