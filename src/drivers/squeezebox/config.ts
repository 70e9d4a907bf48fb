import { z } from 'zod';
import { AllowListSchema } from '../../net/allow-list';

/** The port Squeezebox players and servers use for SlimProto (TCP) and discovery (UDP). */
export const SLIMPROTO_PORT = 3483;

/** Configuration of the Squeezebox driver (`squeezebox` in the config file). */
export const SqueezeboxConfigSchema = z
  .object({
    /** TCP port of the SlimProto server (and the UDP discovery responder). */
    port: z.number().int().min(1).max(65535).default(SLIMPROTO_PORT),
    /** Address the SlimProto, discovery and audio servers bind to (all interfaces when absent). */
    host: z.string().trim().min(1).optional(),
    /**
     * Answer players' UDP discovery broadcasts (a player started without -s finds the hub). With an
     * LMS or Music Assistant on the same LAN the first answer wins: turn this off there.
     */
    discovery: z.boolean().default(true),
    /** TCP port the players fetch their audio from (0: any free port). */
    audioPort: z.number().int().min(0).max(65535).default(0),
    /** Most SlimProto connections at once (players and anything else); more are refused. */
    maxConnections: z.number().int().min(1).max(10_000).default(64),
    /** Most SlimProto connections from one address (a host running several squeezelites needs one each). */
    maxConnectionsPerAddress: z.number().int().min(1).max(10_000).default(8),
    /** New SlimProto connections a second from one address (burst: twice this); more are reset at accept. */
    newConnectionsPerSecond: z.number().int().min(1).max(10_000).default(10),
    /** Most players (MACs) first seen from one address; offline ones count until forgotten. */
    maxPlayersPerAddress: z.number().int().min(1).max(256).default(16),
    /**
     * A connection that said HELO becomes a player once it answers a keepalive with a STAT within
     * this time, and is closed when it stops reporting for this long (players answer every
     * keepalive, sent every 2 s; ms).
     */
    statTimeoutMs: z.number().int().min(500).max(120_000).default(10_000),
    /**
     * Hosts the SlimProto server answers: addresses or CIDR subnets. SlimProto carries no API
     * token, so any host that can reach the port can be a player; empty (the default) = any host.
     */
    allow: AllowListSchema,
    /** A connection that has not said HELO within this time is closed (ms). */
    heloTimeoutMs: z.number().int().min(100).max(60_000).default(5000),
    /** A player that does not report its buffer ready (or its start) within this time fails the play (ms). */
    startTimeoutMs: z.number().int().min(500).max(60_000).default(10_000),
    /** Players start this long after the last one reported its buffer ready: every player gets the same moment (ms). */
    syncLeadMs: z.number().int().min(20).max(5000).default(250),
    /** A player joining a running play starts this far ahead, the time it needs to buffer (ms). */
    joinLeadMs: z.number().int().min(200).max(10_000).default(1500),
    /** A player further than this from its group (by its elapsed reports) is brought back (skip or pause; ms). */
    syncToleranceMs: z.number().int().min(2).max(1000).default(8),
  })
  .strict();

export type SqueezeboxConfig = z.output<typeof SqueezeboxConfigSchema>;
