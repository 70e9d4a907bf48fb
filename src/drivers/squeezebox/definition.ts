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
    return (part, deps) => new SqueezeboxDriver({ config: part, logger: deps.logger });
  },
});
