import { z } from 'zod';

/**
 * One snapserver, when it needs more than its address. A plain 'host[:port]' string in
 * `servers` is the same as `{ address: 'host[:port]' }` with the top-level defaults.
 */
export const SnapcastServerSchema = z
  .object({
    /** JSON-RPC control endpoint, host[:port] (port 1705 by default). */
    address: z.string().min(1),
    /** Id (the `name=` of the source) of the snapserver stream the hub feeds. */
    stream: z.string().min(1).optional(),
    /**
     * Where the hub writes PCM: `tcp://host:port` (a `tcp://…?mode=server` source) or
     * `pipe:///path` (a pipe source on this machine). Default: read from the stream's URI,
     * with the control host standing in for a wildcard bind address.
     */
    source: z
      .string()
      .regex(/^(tcp:\/\/[^/?#]+|pipe:\/\/\/.+)$/, 'expected tcp://host:port or pipe:///path')
      .optional(),
    /** Stream for groups the hub releases that had no other stream before. */
    idleStream: z.string().min(1).optional(),
    /** snapserver's [stream] buffer (ms): audio still to be heard when the feed ends. */
    bufferMs: z.number().int().min(0).max(60_000).optional(),
    /** Id of a second declared stream for announcements (tcp server-mode or pipe source). */
    announceStream: z.string().min(1).optional(),
    /** Ids of the further hub-fed streams of this server, one per concurrent zone beyond the first. */
    zoneStreams: z.array(z.string().min(1)).optional(),
    /** Ids of this server's client streams (see SnapcastConfigSchema.clientStreams). */
    clientStreams: z.array(z.string().min(1)).optional(),
  })
  .strict();

/** The id of the announcement stream the hub looks for when none is configured. */
export const DEFAULT_ANNOUNCE_STREAM = 'SpeakerHubAnnounce';

/**
 * The further hub-fed streams the hub looks for when none are configured: with `stream`,
 * the pool of streams zones take theirs from. Ids snapserver does not declare are skipped,
 * so a server declaring only the first plays one zone at a time, as before.
 */
export const DEFAULT_ZONE_STREAMS = ['SpeakerHub2', 'SpeakerHub3', 'SpeakerHub4'];

/**
 * The client streams the hub looks for when none are configured (see clientStreams below).
 * Ids snapserver does not declare are skipped: without any, a zone keeps all its clients on
 * its one stream, as before.
 */
export const DEFAULT_CLIENT_STREAMS = ['SpeakerHubClient1', 'SpeakerHubClient2', 'SpeakerHubClient3', 'SpeakerHubClient4'];

/** Configuration of the Snapcast driver (`snapcast` in the config file). */
export const SnapcastConfigSchema = z
  .object({
    /** snapserver JSON-RPC control endpoints: 'host[:port]' strings or objects (see SnapcastServerSchema). */
    servers: z.array(z.union([z.string().min(1), SnapcastServerSchema])).default([]),
    /** Default id of the stream the hub feeds on each server. */
    stream: z.string().min(1).default('SpeakerHub'),
    /** Default idle stream; unset: the first stream that is not the hub's. */
    idleStream: z.string().min(1).optional(),
    /**
     * A second declared stream that announcements play on, so that the music goes on for
     * the other clients of the server. While a server does not declare it, announcements
     * there play on the hub stream and hold the music of its other clients until they are
     * over (the hub logs this once and says it in announcement_status).
     */
    announceStream: z.string().min(1).default(DEFAULT_ANNOUNCE_STREAM),
    /**
     * Further hub-fed streams, one per zone (playback) beyond the first that plays on a server
     * at the same time: snapserver 0.26 cannot add streams at run time, so each is declared in
     * snapserver.conf. A zone takes a free one (`stream` first) for as long as it plays; a play
     * that needs one more than the server declares fails and says which line to add.
     */
    zoneStreams: z.array(z.string().min(1)).default(DEFAULT_ZONE_STREAMS),
    /**
     * Hub-fed streams that give a client of a zone a stream of its own (issue 30), a pool of
     * their own apart from zoneStreams: while a zone plays on several clients of a server, each
     * client beyond the one left on the zone's stream takes a free one for as long as it is in
     * the zone, fed the zone's PCM in step with the zone's stream. An announcement ducked on
     * some of the zone's clients is then mixed in place on their streams only: nobody changes
     * stream, so nobody misses the music. Declared in snapserver.conf like zoneStreams.
     */
    clientStreams: z.array(z.string().min(1)).default(DEFAULT_CLIENT_STREAMS),
    /** Default snapserver buffer (ms), snapserver's own default. */
    bufferMs: z.number().int().min(0).max(60_000).default(1000),
    /** The ffmpeg binary that decodes media to PCM; unset: the hub's media.ffmpegPath. */
    ffmpegPath: z.string().min(1).max(4096).optional(),
    /**
     * Reconnect backoff after a lost control connection (ms): each wait is a quarter of the
     * outage so far, at least reconnectMinMs and at most reconnectMaxMs.
     */
    reconnectMinMs: z.number().int().min(10).max(60_000).default(250),
    /** The longest reconnect wait (ms): see reconnectMinMs. */
    reconnectMaxMs: z.number().int().min(10).max(600_000).default(10_000),
    /** A JSON-RPC request without an answer in this time fails (ms). */
    requestTimeoutMs: z.number().int().min(100).max(120_000).default(5000),
    /** A play fails when ffmpeg yields no audio in this time (ms): unreachable URLs, dead streams. */
    startTimeoutMs: z.number().int().min(500).max(120_000).default(15_000),
  })
  .strict();

export type SnapcastConfig = z.output<typeof SnapcastConfigSchema>;
export type SnapcastServerConfig = z.output<typeof SnapcastServerSchema>;

/** Everything one server connection needs, defaults applied. */
export interface ResolvedServerConfig {
  /** Normalized 'host:port': part of every DeviceID, so it must not change between runs. */
  address: string;
  host: string;
  port: number;
  stream: string;
  source?: string;
  idleStream?: string;
  bufferMs: number;
  announceStream: string;
  /** The further hub-fed streams (zone pool beyond `stream`), without `stream` and `announceStream`. */
  zoneStreams: string[];
  /** The client streams (see SnapcastConfigSchema.clientStreams), none of the streams above. */
  clientStreams: string[];
}

/** Every stream the hub feeds on this server (music, announcements, zone pool, client streams): none is a place to send a group the hub lets go. */
export function hubFedStreams(server: ResolvedServerConfig): string[] {
  return [server.stream, server.announceStream, ...server.zoneStreams, ...server.clientStreams];
}

export const DEFAULT_CONTROL_PORT = 1705;

/** Splits 'host[:port]' ('[v6]:port' too) into host and port. */
export function parseHostPort(address: string, defaultPort: number): { host: string; port: number } {
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(address);
  if (v6) return { host: v6[1], port: v6[2] ? Number(v6[2]) : defaultPort };
  const m = /^([^:]+)(?::(\d+))?$/.exec(address);
  if (!m) throw new Error(`snapcast: cannot parse server address '${address}' (expected host[:port])`);
  const port = m[2] ? Number(m[2]) : defaultPort;
  if (!(port > 0 && port < 65536)) throw new Error(`snapcast: bad port in '${address}'`);
  return { host: m[1], port };
}

export function resolveServers(config: SnapcastConfig): ResolvedServerConfig[] {
  return config.servers.map((entry) => {
    const s: SnapcastServerConfig = typeof entry === 'string' ? { address: entry } : entry;
    const { host, port } = parseHostPort(s.address.trim(), DEFAULT_CONTROL_PORT);
    const stream = s.stream ?? config.stream;
    const announceStream = s.announceStream ?? config.announceStream;
    // Each once, and never the music's first stream or the announcements' (two feeds on one stream would fight).
    const zoneStreams = [...new Set(s.zoneStreams ?? config.zoneStreams)].filter((id) => id !== stream && id !== announceStream);
    const clientStreams = [...new Set(s.clientStreams ?? config.clientStreams)].filter(
      (id) => id !== stream && id !== announceStream && !zoneStreams.includes(id),
    );
    return {
      address: host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`,
      host,
      port,
      stream,
      source: s.source,
      idleStream: s.idleStream ?? config.idleStream,
      bufferMs: s.bufferMs ?? config.bufferMs,
      announceStream,
      zoneStreams,
      clientStreams,
    };
  });
}
