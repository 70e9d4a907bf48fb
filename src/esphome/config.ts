import { z } from 'zod';
import { AllowListSchema } from '../net/allow-list';

/**
 * The ESPHome native API (config `esphome`, flags `--esphome`, `--esphome-port`): the hub as
 * an ESPHome device whose sub-devices are the speakers, each with a media_player entity, for
 * Home Assistant's ESPHome integration. Off by default: nothing listens and nothing is
 * advertised by mDNS unless it is turned on.
 */
export const EsphomeConfigSchema = z
  .object({
    /** Serve the ESPHome native API (flag --esphome). */
    enabled: z.boolean().default(false),
    /** TCP port of the native API (ESPHome's is 6053). */
    port: z.number().int().min(0).max(65535).default(6053),
    /** Address the API listens on. */
    host: z.string().min(1).default('0.0.0.0'),
    /**
     * The Noise pre-shared key, as ESPHome's `api: encryption: key:` (base64 of 32 bytes,
     * e.g. `openssl rand -base64 32`). Without it the API is plaintext and has no token: any
     * host that reaches the port controls the speakers.
     */
    encryptionKey: z
      .string()
      .regex(/^[A-Za-z0-9+/]{43}=$/, 'must be 32 bytes in base64, 44 characters ending in "=" (e.g. `openssl rand -base64 32`)')
      .optional(),
    /** The device's hostname-like name (ESPHome's `name`, ≤ 31 of a-z 0-9 -); default speakerhub-<6 hex digits of its MAC>. */
    name: z
      .string()
      .regex(/^[a-z0-9-]{1,31}$/, 'must be 1–31 characters of a-z, 0-9 and -')
      .optional(),
    /**
     * The room of each speaker, by DeviceID or name → area name: Home Assistant suggests it as
     * the speaker's area (api.proto AreaInfo). A speaker not listed has no area hint.
     */
    areas: z.record(z.string().min(1).max(200), z.string().min(1).max(120)).default({}),
    /** Its friendly name in Home Assistant. */
    friendlyName: z.string().min(1).max(120).default('SpeakerHub'),
    /**
     * How an `announcement` (tts.speak) treats the music: duck (the music goes on, lower, under
     * the voice, where the speaker's driver mixes; elsewhere the hub interrupts) or interrupt
     * (the music stops and comes back after).
     */
    announcementMode: z.enum(['interrupt', 'duck']).default('duck'),
    /** Open API connections at most (Home Assistant holds one). */
    maxConnections: z.number().int().min(1).max(1000).default(32),
    /**
     * Open API connections from one address at most (beyond: reset before a byte is read), so
     * one LAN host cannot take every slot of maxConnections from Home Assistant.
     */
    maxConnectionsPerAddress: z.number().int().min(1).max(1000).default(8),
    /**
     * Hosts the API answers: addresses or CIDR subnets (e.g. Home Assistant's address). A
     * connection from any other host is reset before a byte is read. Plaintext carries no
     * token, so without a list any host that reaches the port controls every speaker;
     * empty (the default) = any host.
     */
    allow: AllowListSchema,
    /**
     * Let clients hand the hub media URLs at loopback, link-local, 0.0.0.0 or the hub's own
     * addresses. Off: such a play is refused (logged, the state unchanged) unless the client
     * runs on the hub's machine itself or the URL's host is the client's own address (Home
     * Assistant proxies media from itself).
     */
    allowLocalUrls: z.boolean().default(false),
    /** Speakers published at most (each is a sub-device; one DeviceInfoResponse lists them all). */
    maxSpeakers: z.number().int().min(1).max(500).default(250),
    /** Bytes queued for a client that does not read before it is dropped. */
    maxWriteBufferBytes: z
      .number()
      .int()
      .min(64 * 1024)
      .max(64 * 1024 * 1024)
      .default(1024 * 1024),
  })
  .strict();

export type EsphomeConfig = z.output<typeof EsphomeConfigSchema>;
