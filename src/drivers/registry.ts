import { z } from 'zod';
import type { DriverDefinition, DriverDeps } from './definition';
import type { SpeakerDriver } from './driver';
import { airplayDriver } from './airplay/definition';
import { mpdDriver } from './mpd/definition';
import { snapcastDriver } from './snapcast/definition';
import { squeezeboxDriver } from './squeezebox/definition';
import { upnpDriver } from './upnp/definition';
import { virtualDriver } from './virtual/definition';

/**
 * Every speaker driver the hub knows, in the order they start. Adding a driver is a folder
 * `src/drivers/<name>/` with a `definition.ts`, plus one line here: the config schema, the
 * CLI's flags, `--drivers` and the docs follow from this list.
 */
export const DRIVERS = [virtualDriver, upnpDriver, snapcastDriver, mpdDriver, airplayDriver, squeezeboxDriver] as const;

export type RegisteredDriver = (typeof DRIVERS)[number];

/** Names accepted in `drivers` / `--drivers`. */
export const DRIVER_NAMES: readonly string[] = DRIVERS.map((d) => d.name);

export function driverDefinition(name: string): DriverDefinition | undefined {
  return (DRIVERS as readonly DriverDefinition[]).find((d) => d.name === name);
}

/** Each driver's config part under its key, as one zod shape (every part defaulted). */
export type DriverConfigShape = {
  [D in RegisteredDriver as D['configKey']]: z.ZodPrefault<D['configSchema']>;
};

export function driverConfigShape(): DriverConfigShape {
  return Object.fromEntries(DRIVERS.map((d) => [d.configKey, (d.configSchema as z.ZodType).prefault({})])) as unknown as DriverConfigShape;
}

/**
 * The drivers that run: those named in `drivers`, plus every driver whose part turns it on
 * (servers or renderers given); the virtual speakers when that leaves none.
 */
export function resolveDriverNames(named: readonly string[] | undefined, config: Record<string, unknown>): string[] {
  const implied = (DRIVERS as readonly DriverDefinition[]).filter((d) => d.enabledBy?.(config[d.configKey] as never)).map((d) => d.name);
  const all = [...new Set([...(named ?? []), ...implied])];
  return all.length ? all : ['virtual'];
}

/** The `drivers` key: names from this registry; an unknown one lists the known ones. */
export const DriverNamesSchema = z
  .array(z.string().trim().min(1))
  .min(1)
  .superRefine((names, ctx) => {
    for (const [i, n] of names.entries()) {
      if (!DRIVER_NAMES.includes(n)) {
        ctx.addIssue({ code: 'custom', path: [i], message: `unknown driver '${n}'; known drivers: ${DRIVER_NAMES.join(', ')}` });
      }
    }
  });

/**
 * Creates the configured drivers in `names` order, loading each implementation only now.
 * A part that asks for nothing (zero virtual speakers) makes no driver.
 */
export async function createDrivers(
  names: readonly string[],
  config: Record<string, unknown>,
  deps: Omit<DriverDeps, 'logger'> & { logger: DriverDeps['logger'] },
): Promise<SpeakerDriver[]> {
  const drivers: SpeakerDriver[] = [];
  for (const name of names) {
    const def = driverDefinition(name);
    if (!def) throw new Error(`unknown driver '${name}'`);
    const factory = await def.load();
    const driver = factory(config[def.configKey], { ...deps, logger: deps.logger.child({ driver: name }) });
    if (driver) drivers.push(driver);
  }
  return drivers;
}
