import { z } from 'zod';
import { cloudLinkFrontEnd } from './cloud-link/definition';
import { dlnaFrontEnd } from './dlna/definition';
import { esphomeFrontEnd } from './esphome/definition';
import type { HubExtension } from './extensions/extension';
import type { FrontEndDefinition } from './extensions/front-end';
import { lazyExtension } from './extensions/lazy';
import { mqttFrontEnd } from './mqtt/definition';

/**
 * Every front end the hub composes from its config besides REST, in the order they start
 * (after the REST server), as src/drivers/registry.ts lists the drivers. Adding a front end
 * is a folder with a `definition.ts` plus one line here: its config parts, its CLI flags,
 * its banner lines and whether it runs follow from this list, for the CLI and every embedder.
 */
export const FRONT_ENDS = [mqttFrontEnd, cloudLinkFrontEnd, dlnaFrontEnd, esphomeFrontEnd] as const;

type Registered = (typeof FRONT_ENDS)[number];
type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;
type PartsOf<F> = F extends FrontEndDefinition<infer P> ? { [K in keyof P]: z.ZodPrefault<P[K]> } : never;

/** Each front end's config parts under their keys, as one zod shape (every part defaulted). */
export type FrontEndConfigShape = UnionToIntersection<PartsOf<Registered>>;

const all = FRONT_ENDS as readonly FrontEndDefinition[];

export function frontEndConfigShape(): FrontEndConfigShape {
  return Object.fromEntries(
    all.flatMap((f) => Object.entries(f.config).map(([key, schema]) => [key, schema.prefault({})])),
  ) as unknown as FrontEndConfigShape;
}

export function frontEndDefinition(name: string): FrontEndDefinition | undefined {
  return all.find((f) => f.name === name);
}

/** The front ends the validated config turns on, in registry order. */
export function enabledFrontEnds(config: Record<string, unknown>): FrontEndDefinition[] {
  return all.filter((f) => f.enabledBy(Object.fromEntries(Object.keys(f.config).map((k) => [k, config[k]]))));
}

/**
 * The extensions a hub runs for its config: one per enabled front end, loaded only when the
 * hub starts it. A front end whose name is among `given` (an embedder's own instance, e.g. a
 * test that reads its status) is left to that instance, so it never runs twice.
 */
export function frontEndExtensions(config: Record<string, unknown>, given: readonly HubExtension[]): HubExtension[] {
  const taken = new Set(given.map((x) => x.name));
  return enabledFrontEnds(config)
    .filter((f) => !taken.has(f.name))
    .map((f) => lazyExtension(f.name, async () => (await f.load())()));
}
