import { z } from 'zod';
import { AllowListSchema } from '../net/allow-list';

/**
 * DLNA renderers (config `dlna`, flag `--dlna`): every speaker the hub drives published as a
 * UPnP AV MediaRenderer:1. Off by default: nothing multicasts unless it is turned on.
 */
export const DlnaConfigSchema = z
  .object({
    /** Publish every speaker as a DLNA renderer (flag --dlna). */
    enabled: z.boolean().default(false),
    /** TCP port of the renderers' HTTP server (descriptions, SOAP control, GENA); 0: any free port. */
    port: z.number().int().min(0).max(65535).default(0),
    /** One renderer "All speakers" whose plays are party-mode plays. */
    allSpeakers: z.boolean().default(true),
    /** One renderer "<name> (announcements)" per speaker: every play on it is an announce with restore. */
    announcementRenderers: z.boolean().default(true),
    /**
     * How the announcement renderers' plays treat the music (announce Mode): interrupt (it
     * stops and comes back after) or duck (it goes on, DuckLevel dB lower, under the voice,
     * where the speaker's driver mixes; elsewhere it interrupts and announcement_status says
     * why). A UPnP control point has no way to ask for either, so it is chosen here.
     */
    announcementMode: z.enum(['interrupt', 'duck']).default('interrupt'),
    /** duck: dB the music goes down (-40..0; the hub's default when unset). */
    duckLevel: z.number().int().min(-40).max(0).optional(),
    /** duck: fade down and up, ms (0..10000; the hub's default when unset). */
    fadeMs: z.number().int().min(0).max(10_000).optional(),
    /**
     * Publish a plain renderer for speakers that are themselves UPnP renderers (the upnp
     * driver's) too. Off: a control point already sees the real renderer, and a second entry
     * of the same speaker would only confuse it. Their "(announcements)" renderer is published
     * either way (announcementRenderers): the real renderer has no announcements. The hub's own
     * renderers, found by its own UPnP driver, are never taken for speakers.
     */
    publishUpnpSpeakers: z.boolean().default(false),
    /** SSDP max-age (CACHE-CONTROL) in seconds; NOTIFY alive is repeated at a third of it. */
    maxAgeSeconds: z.number().int().min(60).max(86_400).default(1800),
    /** GENA subscriptions kept per renderer service. */
    maxSubscribersPerService: z.number().int().min(1).max(1000).default(16),
    /** GENA subscriptions kept in all (every renderer service together). */
    maxSubscribers: z.number().int().min(1).max(100_000).default(512),
    /**
     * GENA subscriptions one address may hold per service: one host renewing
     * can never take every slot from the other control points (beyond: 503).
     */
    maxSubscribersPerAddressPerService: z.number().int().min(1).max(1000).default(4),
    /** GENA subscriptions one address may hold in all. */
    maxSubscribersPerAddress: z.number().int().min(1).max(100_000).default(64),
    /**
     * Hosts the renderers answer (SSDP, HTTP, SOAP, GENA): addresses or CIDR subnets. UPnP
     * carries no API token, so any host that can reach the hub may control every speaker;
     * empty (the default) = any host.
     */
    allow: AllowListSchema,
    /**
     * Let control points hand the hub URLs at loopback, link-local or the hub's own addresses
     * (a media server on the hub's machine). Off: such a URL is refused with UPnP error 716,
     * so a LAN host cannot make the hub fetch services on its own machine.
     */
    allowLocalUrls: z.boolean().default(false),
    /** Longest GENA subscription granted (a control point asking for more gets this). */
    maxSubscriptionSeconds: z.number().int().min(60).max(86_400).default(1800),
    /**
     * The hub's media library as a UPnP AV MediaServer (ContentDirectory Browse and Search),
     * for Home Assistant's media browser, BubbleUPnP, VLC, Kodi (docs/dlna-media-server.md).
     */
    mediaServer: z.boolean().default(true),
    /** The MediaServer's name on the network; default "SpeakerHub library (<host name>)". */
    mediaServerName: z.string().trim().min(1).max(64).optional(),
  })
  .strict();

export type DlnaConfig = z.output<typeof DlnaConfigSchema>;
