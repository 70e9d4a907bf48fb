import { z } from 'zod';

/** Configuration of the Snapcast driver (`snapcast` in the config file). */
export const SnapcastConfigSchema = z
  .object({
    /** snapserver JSON-RPC control endpoints, host[:port] (port 1705 by default). */
    servers: z.array(z.string().min(1)).default([]),
  })
  .strict();

export type SnapcastConfig = z.output<typeof SnapcastConfigSchema>;
