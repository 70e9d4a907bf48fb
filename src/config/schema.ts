import { homedir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';

/**
 * The core's configuration sections, with the embedded defaults `npm start` runs on. Drivers
 * and front ends contribute their own sections (src/hub-config.ts composes them): this module
 * knows none of them.
 */
export const CoreConfigShape = {
  /** Where the hub keeps its token, UUID, sample media and TTS cache. */
  dataDir: z.string().min(1).default(join(homedir(), '.speakerhub')),
  server: z
    .object({
      /** The REST server (the local API, the browser client, MQTT over WebSocket); off: a library hub without HTTP. */
      enabled: z.boolean().default(true),
      /** Address the REST server binds (0.0.0.0: every interface). */
      host: z.string().min(1).default('0.0.0.0'),
      /** Port of the REST server (0: any free port). */
      port: z.number().int().min(0).max(65535).default(8090),
      /** Bearer token; generated on first start and kept in dataDir when absent. */
      token: z.string().min(16, 'server.token must be at least 16 characters').optional(),
      /** false turns bearer authentication off: only for trusted LANs. */
      auth: z.boolean().default(true),
      /** Access-Control-Allow-Origin of the REST answers. */
      corsOrigin: z.string().default('*'),
    })
    .strict()
    .prefault({}),
  mediaServer: z
    .object({
      /** Address the media server binds; speakers must reach it. Default: network.interface's address, else 127.0.0.1. */
      host: z.string().min(1).optional(),
      /** Port of the media server (0: any free port). */
      port: z.number().int().min(0).max(65535).default(0),
      /** Host or IP put in media URLs, when the bind address is not what speakers reach. */
      advertiseHost: z.string().min(1).optional(),
    })
    .strict()
    .prefault({}),
  media: z
    .object({
      /** Music folders to scan into the library. */
      folders: z.array(z.string().min(1)).default([]),
      /** Generates a few sample tracks into dataDir/samples so a fresh hub has music. */
      samples: z.boolean().default(true),
      /** Rescan when files in the folders change (debounced); rescan_media rescans on demand. */
      watch: z.boolean().default(true),
      /** Quiet time after the last change in a folder before that rescan. */
      watchDebounceMs: z.number().int().min(50).max(600_000).default(2000),
      /**
       * The ffmpeg binary every decode runs (announcement clips, Snapcast's and AirPlay's feeds,
       * Squeezebox's stream): a name looked up on PATH, or a path. snapcast.ffmpegPath, when set,
       * overrides it for Snapcast.
       */
      ffmpegPath: z.string().min(1).max(4096).default('ffmpeg'),
    })
    .strict()
    .prefault({}),
  webMedia: z
    .object({
      /**
       * Refuse MediaUrls whose host is (or resolves to) a loopback or link-local address
       * (MediaUrlRefused). Off by default: a stream served on the hub's own machine is a
       * common setup, and every caller holds the API token.
       */
      refuseLocalAddresses: z.boolean().default(false),
    })
    .strict()
    .prefault({}),
  network: z
    .object({
      /** Interface for SSDP and for media serving (its IPv4 address goes into media URLs). */
      interface: z.string().min(1).optional(),
    })
    .strict()
    .prefault({}),
  sessions: z
    .object({
      /** A session expires this long after its last command. */
      idleMinutes: z.number().positive().default(60),
      /** Sessions kept at most; one more evicts the longest-idle session. */
      maxSessions: z.number().int().min(1).default(20_000),
      /** Keep the session table (token hashes) in dataDir/sessions.json, so sessions survive restarts. */
      persist: z.boolean().default(true),
    })
    .strict()
    .prefault({}),
  tts: z
    .object({
      /** Text-to-speech engine: espeak (espeak-ng, offline), festival (offline, clearer, slower) or voicerss (a web service, needs a key). */
      provider: z.enum(['espeak', 'voicerss', 'festival']).default('espeak'),
      /** espeak-ng voice (e.g. en, en-us, de), VoiceRSS language[:voice] (e.g. en-us:Linda) or festival voice (en, or a name like cmu_us_slt_arctic_hts). */
      voice: z.string().min(1).optional(),
      /** Longest Text (characters) an announcement may speak (TextTooLong beyond). */
      maxTextLength: z.number().int().min(1).max(100_000).default(1000),
      /** Synthesized texts kept in the cache (least recently used evicted; limits.ttsCacheMB bounds their size). */
      maxCacheEntries: z.number().int().min(1).default(500),
      espeak: z
        .object({
          /** binary: the system's espeak-ng (fast); wasm: the npm build (no install, slower); auto: the binary when installed. */
          mode: z.enum(['auto', 'binary', 'wasm']).default('auto'),
          /** The espeak-ng program (default: espeak-ng on PATH). */
          binaryPath: z.string().optional(),
        })
        .strict()
        .prefault({}),
      voicerss: z
        .object({
          /** VoiceRSS application key (required when tts.provider is voicerss; never logged). */
          key: z.string().min(1).optional(),
          /** VoiceRSS endpoint (default https://api.voicerss.org/). */
          baseUrl: z.url().optional(),
        })
        .strict()
        .prefault({}),
      /** festival's text2wave (Debian: apt-get install festival festvox-us-slt-hts) and the voice an English tag means. */
      festival: z
        .object({
          /** festival's text2wave script (default: text2wave on PATH). */
          binaryPath: z.string().min(1).optional(),
          /** The festival voice an English tts.voice (en, en-us …) means (default cmu_us_slt_arctic_hts). */
          voice: z
            .string()
            .regex(/^[a-z][a-z0-9_]{0,63}$/, 'a festival voice name: lower-case letters, digits and underscores')
            .optional(),
        })
        .strict()
        .prefault({}),
    })
    .strict()
    .prefault({}),
  /** Hardening limits (docs/security.md): connections, event streams, media serving, TTS. */
  limits: z
    .object({
      /** Open REST connections from all clients together. */
      maxConnections: z.number().int().min(1).max(1_000_000).default(2000),
      /** Open REST connections from one client address. */
      maxConnectionsPerAddress: z.number().int().min(1).max(1_000_000).default(200),
      /** A request head must arrive within this. */
      headersTimeoutSeconds: z.number().positive().max(3600).default(10),
      /** A whole request (head and body) must arrive within this. */
      requestTimeoutSeconds: z.number().positive().max(3600).default(30),
      /** Open /api/v1/events streams; one more is refused with Busy (HTTP 503). */
      maxEventStreams: z.number().int().min(0).max(100_000).default(100),
      /** Events a stream may lag behind (not read by its client) before it is closed. */
      eventStreamMaxQueued: z.number().int().min(1).max(100_000).default(500),
      /** Socket buffer of an event stream, in KiB, before events queue. */
      eventStreamBufferKB: z.number().int().min(1).max(65_536).default(64),
      /** Media server connections from all addresses together (loopback exempt: virtual speakers). */
      mediaMaxConnections: z.number().int().min(1).max(1_000_000).default(1000),
      /** Media server connections from one address (loopback exempt). */
      mediaMaxConnectionsPerAddress: z.number().int().min(1).max(1_000_000).default(50),
      /** A media download that makes no progress for this long is dropped. */
      mediaSendTimeoutSeconds: z.number().positive().max(86_400).default(60),
      /** A media URL stops working this long after its playback ended. */
      mediaUrlGraceSeconds: z.number().min(0).max(86_400).default(60),
      /** TTS cache size in MiB (besides tts.maxCacheEntries). */
      ttsCacheMB: z.number().positive().max(1_000_000).default(200),
      /** Texts synthesized at once; one more is refused with TtsBusy. */
      ttsQueue: z.number().int().min(1).max(10_000).default(16),
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
  announcements: z
    .object({
      /** Target loudness of announcement audio (TTS, chime, given media), LUFS integrated (EBU R128); 'off' plays it as it comes. */
      loudness: z.union([z.literal('off'), z.number().min(-40).max(-5)]).default(-16),
      /** True-peak ceiling after normalisation, dBTP. */
      truePeak: z.number().min(-12).max(0).default(-1.5),
      /** Silence between the chime and the speech, in the one clip they are rendered into. */
      chimeGapMs: z.number().int().min(0).max(5000).default(300),
      /** Rendered clips kept (LRU), besides limits.ttsCacheMB for their size. */
      maxClipCacheEntries: z.number().int().min(1).max(100_000).default(200),
    })
    .strict()
    .prefault({}),
  log: z
    .object({
      /** pino level: the least severe message logged (silent: none). */
      level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
      /** json: one JSON object per line (for journald, docker, log shippers); pretty: for people; auto: pretty on a terminal. */
      format: z.enum(['auto', 'json', 'pretty']).default('auto'),
    })
    .strict()
    .prefault({}),
};

/**
 * Checks between sections that would otherwise start and fail later, or silently drop a
 * setting (run on the composed configuration).
 */
export function checkCoreCombinations(c: { tts: { provider: string; voicerss: { key?: string } } }, ctx: z.RefinementCtx): void {
  if (c.tts.provider === 'voicerss' && !c.tts.voicerss.key) {
    ctx.addIssue({
      code: 'custom',
      path: ['tts', 'voicerss', 'key'],
      message: 'required when tts.provider is voicerss (a free key: https://www.voicerss.org/); or use --tts espeak',
    });
  }
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

/** Turns zod's issues into one line per problem, each starting with the key path (`server.port: …`). */
export function configProblems(error: z.ZodError): ConfigError {
  return new ConfigError(
    error.issues.map((i) => {
      const path = i.path.join('.');
      if (i.code === 'unrecognized_keys') {
        return i.keys.map((k) => `${path ? `${path}.` : ''}${k}: unknown key`).join('; ');
      }
      return `${path || '(root)'}: ${i.message}`;
    }),
  );
}
