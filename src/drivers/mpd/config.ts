import { z } from 'zod';

/** One MPD server. A plain 'host[:port]' string in `servers` is the same as `{ host, port }`. */
export const MpdServerSchema = z
  .object({
    /** Host name or address of the MPD. */
    host: z.string().trim().min(1),
    /** Its port (MPD's default 6600). */
    port: z.number().int().min(1).max(65535).default(6600),
    /** Sent with `password` after the greeting; never logged. */
    password: z.string().min(1).max(1024).optional(),
    /** DeviceName; default `MPD <host>`. */
    name: z.string().trim().min(1).max(200).optional(),
  })
  .strict();

/** Configuration of the MPD driver (`mpd` in the config file). */
export const MpdConfigSchema = z
  .object({
    /** MPD servers: 'host[:port]' strings or objects (see MpdServerSchema). Giving any turns the driver on. */
    servers: z
      .array(z.union([z.string().trim().min(1), MpdServerSchema]))
      .max(256)
      .default([]),
    /** Reconnect backoff after a lost or refused connection (ms): doubles from min to max, with ±25 % jitter. */
    reconnectMinMs: z.number().int().min(10).max(60_000).default(500),
    /** The longest reconnect wait (ms): see reconnectMinMs. */
    reconnectMaxMs: z.number().int().min(10).max(600_000).default(15_000),
    /** A greeting or a command answer not in within this time fails and drops the connection (ms). */
    requestTimeoutMs: z.number().int().min(100).max(120_000).default(5000),
  })
  .strict();

export type MpdConfig = z.output<typeof MpdConfigSchema>;

export interface ResolvedMpdServer {
  host: string;
  port: number;
  password?: string;
  name: string;
  /** 'host:port', the seed of the DeviceID: must not change between runs. */
  address: string;
}

export const DEFAULT_MPD_PORT = 6600;

function parseHostPort(address: string): { host: string; port: number } {
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(address);
  const m = v6 ?? /^([^:]+)(?::(\d+))?$/.exec(address);
  if (!m) throw new Error(`mpd: cannot parse server address '${address}' (expected host[:port])`);
  const port = m[2] ? Number(m[2]) : DEFAULT_MPD_PORT;
  if (!(port > 0 && port < 65536)) throw new Error(`mpd: bad port in '${address}'`);
  return { host: m[1], port };
}

export function resolveMpdServers(config: MpdConfig): ResolvedMpdServer[] {
  return config.servers.map((entry) => {
    const s = typeof entry === 'string' ? { ...parseHostPort(entry), password: undefined, name: undefined } : entry;
    const address = s.host.includes(':') ? `[${s.host}]:${s.port}` : `${s.host}:${s.port}`;
    return { host: s.host, port: s.port, password: s.password, name: s.name ?? `MPD ${s.host}`, address };
  });
}
