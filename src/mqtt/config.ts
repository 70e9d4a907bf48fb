import { z } from 'zod';

/** A key given by the user: at least 16 printable ASCII characters (they are MQTT credentials). */
const key = (name: string) =>
  z
    .string()
    .min(16, `${name} must be at least 16 characters`)
    .max(256, `${name} must be at most 256 characters`)
    .regex(/^[\x21-\x7e]+$/, `${name} must be printable ASCII characters without spaces`);

/** Configuration of the MQTT front end (`mqtt` in the config file). */
export const MqttConfigSchema = z
  .object({
    /**
     * Whether the hub runs MQTT. Off unless the config says so, so a library hub (createHub,
     * Node-RED, Homebridge) opens no broker it was not asked for; `speakerhub hub` turns it
     * on unless `--mqtt off` (its default, beneath the config file: src/mqtt/definition.ts).
     */
    enabled: z.boolean().default(false),
    /**
     * External broker URL (mqtt://host:port, mqtts://host:port). Absent: the hub runs its
     * embedded broker and talks to it through the same client code ("" too: `--mqtt embedded`
     * overrides a URL in the config file).
     */
    url: z.union([z.literal(''), z.url({ protocol: /^mqtts?$/, error: 'mqtt.url must be an mqtt:// or mqtts:// URL' })]).optional(),
    /** Credentials at the external broker (the embedded broker needs none from the config). */
    username: z.string().min(1).optional(),
    /** Password at the external broker (never logged). */
    password: z.string().min(1).optional(),
    /** mqtts: CA file (PEM) to trust beyond the system's. */
    caFile: z.string().min(1).optional(),
    /** mqtts: verify the broker's certificate (false only for a test broker). */
    rejectUnauthorized: z.boolean().default(true),
    /** The hub's client id (a persistent session is kept under it). Default: speakerhub-<first 8 of the hub UUID>. */
    clientId: z.string().min(1).max(64).optional(),
    /** Embedded broker: TCP port (0: any free port). */
    port: z.number().int().min(0).max(65535).default(1883),
    /** Embedded broker: bind address (default: the REST server's). */
    host: z.string().min(1).optional(),
    /** Embedded broker: MQTT over WebSocket at /mqtt on the REST server's port. */
    websocket: z.boolean().default(true),
    /** Embedded broker: largest MQTT packet accepted; a bigger one closes the connection. */
    maxPayloadBytes: z
      .number()
      .int()
      .min(1024)
      .max(16 * 1024 * 1024)
      .default(256 * 1024),
    /** Embedded broker: most connected clients. */
    maxClients: z.number().int().min(1).max(100_000).default(5000),
    /** Embedded broker: a subscriber whose socket does not drain in this time is disconnected. */
    drainTimeoutMs: z.number().int().min(100).max(600_000).default(10_000),
    /** Reconnect backoff towards the broker: the shortest wait. */
    reconnectMinMs: z.number().int().min(50).max(60_000).default(500),
    /** The longest reconnect wait towards the broker. */
    reconnectMaxMs: z.number().int().min(100).max(600_000).default(30_000),
    /**
     * How often the host's LAN addresses are checked (NetworkUnavailable when they are all
     * gone, and again when they are back); 0: not watched.
     */
    networkWatchMs: z
      .number()
      .int()
      .min(0)
      .max(600_000)
      .refine((v) => v === 0 || v >= 50, 'mqtt.networkWatchMs must be 0 (off) or at least 50')
      .default(5000),
    /** Commands the hub runs at once; further messages wait at the broker (backpressure). */
    maxConcurrentCommands: z.number().int().min(1).max(1000).default(32),
    /** Root of the bridge topics (zigbee2mqtt style). */
    baseTopic: z
      .string()
      .min(1)
      .max(100)
      .regex(/^[^#+\s]+$/, 'mqtt.baseTopic must not contain #, + or spaces')
      .refine((t) => !t.startsWith('/') && !t.endsWith('/'), 'mqtt.baseTopic must not start or end with /')
      .default('speakerhub'),
    /** Per-speaker state also each second while playing (time_elapsed); off: only on changes. */
    timeUpdates: z.boolean().default(false),
    /** Home Assistant MQTT discovery. */
    haDiscovery: z.boolean().default(false),
    /** Topic prefix Home Assistant's MQTT discovery listens on. */
    haDiscoveryPrefix: z
      .string()
      .min(1)
      .max(100)
      .regex(/^[^#+\s]+$/)
      .default('homeassistant'),
  })
  .strict()
  .refine((c) => c.reconnectMinMs <= c.reconnectMaxMs, {
    message: 'mqtt.reconnectMinMs must not exceed mqtt.reconnectMaxMs',
    path: ['reconnectMinMs'],
  });

/** The spec's publish/subscribe mode (`pubsub` in the config file). */
export const PubsubConfigSchema = z
  .object({
    /** The shared channel: the MQTT topic, used verbatim. */
    channel: z
      .string()
      .min(1)
      .max(200)
      .regex(/^[^#+]+$/, 'pubsub.channel must not contain MQTT wildcards (# or +)')
      .default('speakerhub/channel'),
    /** The key publishers give; generated on first start and kept in the data folder when absent. */
    publishKey: key('pubsub.publishKey').optional(),
    /** The key subscribers give; generated on first start and kept in the data folder when absent. */
    subscribeKey: key('pubsub.subscribeKey').optional(),
  })
  .strict()
  .refine((c) => !c.publishKey || c.publishKey !== c.subscribeKey, {
    message: 'pubsub.publishKey and pubsub.subscribeKey must differ',
    path: ['publishKey'],
  });

export type MqttConfig = z.output<typeof MqttConfigSchema>;
export type PubsubConfig = z.output<typeof PubsubConfigSchema>;
