import { z } from 'zod';
import { CloudLinkConfigSchema } from './cloud-link/config';
import { DlnaConfigSchema } from './dlna/config';
import { checkCoreCombinations, ConfigError, configProblems, CoreConfigShape } from './config/schema';
import { DriverNamesSchema, driverConfigShape, resolveDriverNames } from './drivers/registry';
import { MqttConfigSchema, PubsubConfigSchema } from './mqtt/config';

/**
 * The whole configuration: the core's sections (src/config/schema.ts), each driver's part
 * (from src/drivers/registry.ts) and each front end's part (one line below). This module and
 * src/cli.ts are where the hub is composed; the core and the config layer import no front end.
 */
const FRONT_END_PARTS = {
  /** MQTT: embedded or external broker, the bridge, Home Assistant discovery. */
  mqtt: MqttConfigSchema.prefault({}),
  /** The spec's pub/sub mode over MQTT. */
  pubsub: PubsubConfigSchema.prefault({}),
  /** Cloud mode: the hub's link to SpeakerHub Cloud (src/cloud-link). */
  cloud: CloudLinkConfigSchema.prefault({}),
  /** DLNA renderers: every speaker published as a UPnP MediaRenderer (src/dlna). */
  dlna: DlnaConfigSchema.prefault({}),
};

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
    ...FRONT_END_PARTS,
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
