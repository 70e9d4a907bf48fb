import { DRIVERS } from '../drivers/registry';
import type { HubOptionRegistrar } from './hub-command';

/**
 * Each driver's own flags on `speakerhub hub` (its definition's `flags`), mapped onto its
 * config part under the driver's key, with labels so errors name the flag the user typed.
 */
export const driverHubOptions: HubOptionRegistrar = (hub) => {
  const withFlags = DRIVERS.filter((d) => d.flags);
  for (const d of withFlags) d.flags!.register(hub);
  return (flags) => {
    const overrides: Record<string, unknown> = {};
    const labels: Record<string, string> = {};
    for (const d of withFlags) {
      const { part, labels: own } = d.flags!.toConfig(flags);
      if (Object.keys(part).length) overrides[d.configKey] = part;
      for (const [k, flag] of Object.entries(own)) labels[`${d.configKey}.${k}`] = flag;
    }
    return { overrides, labels };
  };
};
