import { join } from 'node:path';
import { intFlag } from '../../util/flags';
import { defineDriver } from '../definition';
import { SqueezeboxConfigSchema } from './config';

export const squeezeboxDriver = defineDriver({
  name: 'squeezebox',
  summary: 'Squeezebox players (squeezelite, piCorePlayer): the hub is their SlimProto server and starts them in sync',
  configKey: 'squeezebox',
  configSchema: SqueezeboxConfigSchema,
  flags: {
    register(hub) {
      hub
        .option('--slimproto-port <port>', 'SlimProto server port for Squeezebox players (default 3483)', intFlag('--slimproto-port', 1, 65535))
        .option('--no-slimproto-discovery', 'do not answer Squeezebox discovery broadcasts (an LMS or Music Assistant on the LAN answers them)');
    },
    toConfig(f) {
      const part: Record<string, unknown> = {};
      const labels: Record<string, string> = {};
      if (f.slimprotoPort !== undefined) {
        part.port = f.slimprotoPort;
        labels.port = '--slimproto-port';
      }
      // --no-x flags are true unless given.
      if (f.slimprotoDiscovery === false) {
        part.discovery = false;
        labels.discovery = '--no-slimproto-discovery';
      }
      return { part, labels };
    },
  },
  load: async () => {
    const { SqueezeboxDriver } = await import('./driver');
    const { PlayerVolumes } = await import('../../persistence/player-volumes');
    return (part, deps) =>
      new SqueezeboxDriver({
        config: part,
        logger: deps.logger,
        ffmpegPath: deps.hub.media?.ffmpegPath,
        // squeezelite keeps no volume across a reconnect: the hub keeps each player's (by MAC) in its data folder.
        volumes: deps.hub.dataDir ? new PlayerVolumes(join(deps.hub.dataDir, 'squeezebox-volumes.json'), deps.logger) : undefined,
      });
  },
});
