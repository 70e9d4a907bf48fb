import { FRONT_ENDS } from '../front-ends';
import type { FrontEndDefinition } from '../extensions/front-end';
import { mergeConfig } from '../config/load';
import type { HubOptionRegistrar } from './hub-command';

/**
 * Each front end's flags on `speakerhub hub` (its definition's `flags`, src/front-ends.ts),
 * mapped onto config — and nothing else: the hub starts the front ends its config turns on,
 * exactly as an embedded hub does. Banner lines come from each running front end.
 */
export const frontEndHubOptions: HubOptionRegistrar = (hub) => {
  const all = FRONT_ENDS as readonly FrontEndDefinition[];
  const withFlags = all.filter((f) => f.flags);
  for (const f of withFlags) f.flags!.register(hub);
  return (flags) => {
    let overrides: Record<string, unknown> = {};
    let defaults: Record<string, unknown> = {};
    const labels: Record<string, string> = {};
    for (const f of withFlags) {
      const own = f.flags!.toConfig(flags);
      overrides = mergeConfig(overrides, own.overrides);
      Object.assign(labels, own.labels);
      if (f.flags!.defaults) defaults = mergeConfig(defaults, f.flags!.defaults);
    }
    return {
      overrides,
      labels,
      defaults,
      banner: (running, options) => all.flatMap((f) => f.banner?.(running.extension(f.name), options) ?? []),
    };
  };
};
