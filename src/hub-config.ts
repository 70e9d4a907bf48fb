import { z } from 'zod';
import { checkCoreCombinations, ConfigError, configProblems, CoreConfigShape } from './config/schema';
import { DriverNamesSchema, driverConfigShape, resolveDriverNames } from './drivers/registry';
import { frontEndConfigShape } from './front-ends';

/**
 * The whole configuration: the core's sections (src/config/schema.ts), each driver's part
 * (from src/drivers/registry.ts) and each front end's parts (from src/front-ends.ts). This
 * module, src/front-ends.ts and src/cli.ts are where the hub is composed; the core and the
 * config layer import no front end.
 */
/** The whole configuration, with the embedded defaults `npm start` runs on. */
export const ConfigSchema = z
  .object({
    ...CoreConfigShape,
    /**
     * Speaker drivers to run; one hub can mix them (DeviceIDs never collide). A driver whose
     * part names its speakers (renderers, servers) runs without being listed; with none at all,
     * the virtual speakers.
     */
    drivers: DriverNamesSchema.optional(),
    ...driverConfigShape(),
    ...frontEndConfigShape(),
  })
  .strict()
  .superRefine(checkCoreCombinations)
  .transform((c) => ({ ...c, drivers: resolveDriverNames(c.drivers, c) }));

export type HubConfig = z.output<typeof ConfigSchema>;
export type HubConfigInput = z.input<typeof ConfigSchema>;

export { ConfigError };

/** Validates a configuration; errors name the offending key (e.g. `server.port`). */
export function parseConfig(input: unknown): HubConfig {
  const r = ConfigSchema.safeParse(input ?? {});
  if (r.success) return r.data;
  throw configProblems(r.error);
}
