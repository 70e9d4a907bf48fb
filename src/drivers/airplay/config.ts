import { z } from 'zod';

/** One AirPlay (RAOP) receiver given by address. */
export const AirPlayReceiverSchema = z
  .object({
    /** Host name or address of the receiver. */
    host: z.string().min(1),
    /** RTSP port the receiver listens on (shairport-sync: 5000). */
    port: z.number().int().min(1).max(65535).default(5000),
    /** DeviceName (default `AirPlay <host>:<port>`). */
    name: z.string().min(1).optional(),
    /** Receiver password (RTSP digest auth); never logged. */
    password: z.string().min(1).optional(),
  })
  .strict();

/** `host:port` (or `host`, port 5000) as given on the command line. */
export function parseReceiverAddress(text: string): { host: string; port: number } {
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d{1,5}))?$/.exec(text.trim());
  if (!m) throw new Error(`expected host:port, got '${text}'`);
  const port = m[2] ? Number(m[2]) : 5000;
  if (port < 1 || port > 65535) throw new Error(`port out of range in '${text}'`);
  return { host: m[1].replace(/^\[|\]$/g, ''), port };
}

/** Configuration of the AirPlay driver (`airplay` in the config file). */
export const AirPlayConfigSchema = z
  .object({
    /** Receivers given by address (`--airplay host:port`); discovery finds the others. */
    receivers: z
      .array(
        z.union([
          z
            .string()
            .min(1)
            .transform((s, ctx) => {
              try {
                return parseReceiverAddress(s);
              } catch (e) {
                ctx.addIssue({ code: 'custom', message: (e as Error).message });
                return z.NEVER;
              }
            }),
          AirPlayReceiverSchema,
        ]),
      )
      .max(64)
      .default([]),
    /** Browse `_raop._tcp` by mDNS on network.interface (on when the driver runs without receivers). */
    discovery: z.boolean().optional(),
    /** Audio the receivers buffer before playing (ms): the RTP latency every receiver of a play shares. */
    latencyMs: z.number().int().min(500).max(4000).default(2000),
    /**
     * The RTP latency of an announcement played as a stream of its own (ms): how long after the
     * hub sends it the receivers play it. Shorter than latencyMs, so speech starts sooner; a
     * ducked announcement is mixed into the music's stream and shares latencyMs.
     */
    announcementLatencyMs: z.number().int().min(250).max(4000).default(500),
    /** RTSP request timeout (ms). */
    requestTimeoutMs: z.number().int().min(500).max(60_000).default(5000),
  })
  .strict();

export type AirPlayConfig = z.output<typeof AirPlayConfigSchema>;
