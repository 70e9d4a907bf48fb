import type { Command } from 'commander';
import type { z } from 'zod';
import type { HubExtension } from './extension';

/** A front end's config parts: top-level config key → zod object whose every field has a default. */
export type FrontEndParts = Record<string, z.ZodType>;

/** The validated parts of one front end, by key. */
export type PartsOutput<P extends FrontEndParts> = { [K in keyof P]: z.output<P[K]> };

/**
 * How a front end (MQTT, DLNA, the cloud link …) plugs into the hub: a `definition.ts` in its
 * folder exporting one of these, plus one line in `src/front-ends.ts`. The hub starts every
 * front end whose `enabledBy` holds for the validated config, whoever created the hub (the
 * CLI, createHub, Node-RED, Homebridge): the CLI only maps its flags onto config. The
 * definition is small (zod, types, flag parsing) because every hub loads it; the
 * implementation behind `load()` is imported only when the front end runs.
 */
export interface FrontEndDefinition<P extends FrontEndParts = FrontEndParts> {
  /** The extension's name (logs, `hub.extension(name)`); an embedder's extension of this name takes its place. */
  readonly name: string;
  /** One line for the docs. */
  readonly summary: string;
  /** Its parts of the configuration (the registry adds prefault({}) to each). */
  readonly config: P;
  /** True when the validated parts turn the front end on (e.g. `mqtt.enabled`, a `cloud.url`). */
  enabledBy(parts: PartsOutput<P>): boolean;
  readonly flags?: FrontEndFlags;
  /** Its lines in the CLI's start banner, given its running extension (secrets only when `tty`). */
  banner?(ext: HubExtension | undefined, options: { tty: boolean }): string[];
  /** Loads the implementation: a hub that does not run this front end never loads its code. */
  load(): Promise<() => HubExtension>;
}

/** A front end's flags on `speakerhub hub`: they become config, nothing else. */
export interface FrontEndFlags {
  register(hub: Command): void;
  /**
   * Parsed flags (only those given are defined) → config overrides (whole config shape, e.g.
   * { mqtt: { port } }), and the flag that set each key path so errors name what was typed.
   */
  toConfig(flags: Record<string, unknown>): { overrides: Record<string, unknown>; labels: Record<string, string> };
  /**
   * What the CLI assumes when neither the config file, the environment nor a flag says
   * otherwise (beneath the file): `speakerhub hub` runs the embedded MQTT broker unless
   * `--mqtt off`, while a library hub runs only what its config names.
   */
  readonly defaults?: Record<string, unknown>;
}

/** Identity helper that keeps a definition's literal part keys for the config type. */
export function defineFrontEnd<P extends FrontEndParts>(d: FrontEndDefinition<P>): FrontEndDefinition<P> {
  return d;
}
