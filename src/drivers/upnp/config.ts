import { z } from 'zod';

/** Configuration of the UPnP/DLNA MediaRenderer driver (`upnp` in the config file). */
export const UpnpConfigSchema = z
  .object({
    /**
     * Renderer description URLs (http only: UPnP control is plain HTTP) for networks multicast
     * does not reach (VLANs, Docker). Re-checked every recheckIntervalSeconds.
     */
    renderers: z.array(z.url({ protocol: /^http$/, error: 'must be an http:// description URL' })).default([]),
    /** SSDP discovery (M-SEARCH + NOTIFY) on network.interface. */
    ssdp: z.boolean().default(true),
    /** Seconds between M-SEARCH rounds. */
    searchIntervalSeconds: z.number().int().min(5).max(3600).default(60),
    /** Seconds between re-checks of static renderers (found again / still there). */
    recheckIntervalSeconds: z.number().int().min(1).max(3600).default(30),
    /** Deadline of one control request (SOAP, GENA, description fetch). */
    requestTimeoutMs: z.number().int().min(200).max(60_000).default(4000),
    /**
     * How long play() waits for the renderer to report PLAYING with an advancing position
     * (it has to fetch and buffer the media first).
     */
    playTimeoutSeconds: z.number().int().min(2).max(120).default(10),
    /** Seconds a playing renderer's position may stand still before the play counts as failed. */
    stallSeconds: z.number().int().min(3).max(600).default(15),
    /** GENA subscription lifetime asked for; renewed at half of what the renderer grants. */
    subscriptionSeconds: z.number().int().min(30).max(86_400).default(300),
    /** Port of the GENA callback server (0: any free port). Fix it to open a firewall. */
    callbackPort: z.number().int().min(0).max(65535).default(0),
  })
  .strict();

export type UpnpConfig = z.output<typeof UpnpConfigSchema>;
