import type { Command } from 'commander';
import type { z } from 'zod';
import type { Clock } from '../core/clock';
import type { Logger } from '../logger';
import type { SpeakerDriver } from './driver';

/**
 * How a driver plugs into the hub: a folder `src/drivers/<name>/` with a `definition.ts`
 * exporting one of these, plus one line in `src/drivers/registry.ts`. The definition is
 * small (zod and types only) because every start loads it; the implementation behind
 * `load()` is imported only when the driver runs.
 */
export interface DriverDefinition<S extends z.ZodType = z.ZodType, K extends string = string> {
  /** Name in config.drivers and --drivers. */
  readonly name: string;
  /** One line for --help and the docs. */
  readonly summary: string;
  /** Top-level config key of the driver's part (the name unless a historic key is kept). */
  readonly configKey: K;
  /** The part: a zod object whose every field has a default (the registry adds prefault({})). */
  readonly configSchema: S;
  /** True when the part alone turns the driver on (servers given), as --snapcast does. */
  enabledBy?(part: z.output<S>): boolean;
  readonly flags?: DriverFlags;
  /** Loads the implementation: a hub without this driver never loads its code. */
  load(): Promise<DriverFactory<z.output<S>>>;
}

/** Builds the driver from its part; undefined when the part asks for nothing (e.g. zero virtual speakers). */
export type DriverFactory<C> = (part: C, deps: DriverDeps) => SpeakerDriver | undefined;

/** What the hub hands every driver it creates. */
export interface DriverDeps {
  clock: Clock;
  /** A child logger tagged with the driver's name. */
  logger: Logger;
  /** The hub's version (virtual speakers report it as firmware). */
  version: string;
  /** IPv4 address of network.interface, when configured. */
  networkAddress?: string;
  /** network.interface, when configured. */
  interfaceName?: string;
  /** True for URLs the hub's own media server serves (a renderer playing one is the hub's). */
  isHubMediaUrl(url: string): boolean;
  /** The whole validated configuration, read-only, for cross-cutting settings (webMedia, mediaServer). */
  hub: Readonly<{
    webMedia: { refuseLocalAddresses: boolean };
    mediaServer: { host?: string; advertiseHost?: string };
    network: { interface?: string };
    /** The hub's data folder (drivers that keep state across restarts keep it there). */
    dataDir?: string;
    /** media.ffmpegPath: the ffmpeg binary every decode runs ('ffmpeg' when absent). */
    media?: { ffmpegPath?: string };
  }>;
}

/** A driver's own flags on `speakerhub hub`. */
export interface DriverFlags {
  /** Adds the driver's options to the command. */
  register(hub: Command): void;
  /**
   * Parsed flags (only those the user gave are defined) → the driver's config part, and the
   * flag that set each key of the part (e.g. { servers: '--mpd' }) so errors name what was typed.
   */
  toConfig(flags: Record<string, unknown>): { part: Record<string, unknown>; labels: Record<string, string> };
}

/** Identity helper that keeps a definition's literal types (name, key, schema) for the config type. */
export function defineDriver<S extends z.ZodType, K extends string>(d: DriverDefinition<S, K>): DriverDefinition<S, K> {
  return d;
}
