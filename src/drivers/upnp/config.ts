import { z } from 'zod';

/** Configuration of the UPnP/DLNA MediaRenderer driver (`upnp` in the config file). */
export const UpnpConfigSchema = z
  .object({
    /** Renderer description URLs for networks multicast does not reach (VLANs, Docker). */
    renderers: z.array(z.url()).default([]),
    /** SSDP discovery (M-SEARCH + NOTIFY) on network.interface. */
    ssdp: z.boolean().default(true),
    /** Seconds between M-SEARCH rounds. */
    searchIntervalSeconds: z.number().int().min(5).max(3600).default(60),
  })
  .strict();

export type UpnpConfig = z.output<typeof UpnpConfigSchema>;
