import { homedir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { SnapcastConfigSchema } from '../drivers/snapcast/config';
import { UpnpConfigSchema } from '../drivers/upnp/config';

/** The whole configuration, with the embedded defaults `npm start` runs on. */
export const ConfigSchema = z
  .object({
    /** Where the hub keeps its token, UUID, sample media and TTS cache. */
    dataDir: z.string().min(1).default(join(homedir(), '.speakerhub')),
    server: z
      .object({
        enabled: z.boolean().default(true),
        host: z.string().min(1).default('0.0.0.0'),
        port: z.number().int().min(0).max(65535).default(8090),
        /** Bearer token; generated on first start and kept in dataDir when absent. */
        token: z.string().min(16, 'server.token must be at least 16 characters').optional(),
        /** false turns bearer authentication off: only for trusted LANs. */
        auth: z.boolean().default(true),
        corsOrigin: z.string().default('*'),
      })
      .strict()
      .prefault({}),
    mediaServer: z
      .object({
        /** Address the media server binds; speakers must reach it. Default: network.interface's address, else 127.0.0.1. */
        host: z.string().min(1).optional(),
        port: z.number().int().min(0).max(65535).default(0),
        /** Host or IP put in media URLs, when the bind address is not what speakers reach. */
        advertiseHost: z.string().min(1).optional(),
      })
      .strict()
      .prefault({}),
    media: z
      .object({
        folders: z.array(z.string().min(1)).default([]),
        /** Generates a few sample tracks into dataDir/samples so a fresh hub has music. */
        samples: z.boolean().default(true),
      })
      .strict()
      .prefault({}),
    /** Speaker drivers to run; one hub can mix them (DeviceIDs never collide). */
    drivers: z
      .array(z.enum(['virtual', 'upnp', 'snapcast']))
      .min(1)
      .default(['virtual'])
      .transform((d) => [...new Set(d)]),
    network: z
      .object({
        /** Interface for SSDP and for media serving (its IPv4 address goes into media URLs). */
        interface: z.string().min(1).optional(),
      })
      .strict()
      .prefault({}),
    upnp: UpnpConfigSchema.prefault({}),
    snapcast: SnapcastConfigSchema.prefault({}),
    speakers: z
      .object({
        virtual: z
          .object({
            count: z.number().int().min(0).max(10_000).default(3),
            names: z.array(z.string().min(1)).optional(),
            volume: z.number().int().min(0).max(50).default(20),
          })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
    sessions: z
      .object({
        idleMinutes: z.number().positive().default(60),
        maxSessions: z.number().int().min(1).default(20_000),
      })
      .strict()
      .prefault({}),
    tts: z
      .object({
        provider: z.enum(['espeak', 'voicerss']).default('espeak'),
        /** espeak-ng voice (e.g. en, en-us, de) or VoiceRSS language[:voice] (e.g. en-us:Linda). */
        voice: z.string().min(1).optional(),
        maxTextLength: z.number().int().min(1).max(100_000).default(1000),
        maxCacheEntries: z.number().int().min(1).default(500),
        espeak: z
          .object({ mode: z.enum(['auto', 'binary', 'wasm']).default('auto'), binaryPath: z.string().optional() })
          .strict()
          .prefault({}),
        voicerss: z.object({ key: z.string().min(1).optional(), baseUrl: z.url().optional() }).strict().prefault({}),
      })
      .strict()
      .prefault({}),
    // Playback and announcements (core-announce).
    playback: z
      .object({
        /** Speakers that come back (or appear) while a party play runs join it. */
        partyRejoin: z.boolean().default(true),
      })
      .strict()
      .prefault({}),
    log: z
      .object({ level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info') })
      .strict()
      .prefault({}),
  })
  .strict();

export type HubConfig = z.output<typeof ConfigSchema>;
export type HubConfigInput = z.input<typeof ConfigSchema>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

/** Validates a configuration; errors name the offending key (e.g. `server.port`). */
export function parseConfig(input: unknown): HubConfig {
  const r = ConfigSchema.safeParse(input ?? {});
  if (r.success) return r.data;
  throw new ConfigError(
    r.error.issues.map((i) => {
      const path = i.path.join('.');
      if (i.code === 'unrecognized_keys') {
        return i.keys.map((k) => `${path ? `${path}.` : ''}${k}: unknown key`).join('; ');
      }
      return `${path || '(root)'}: ${i.message}`;
    }),
  );
}
