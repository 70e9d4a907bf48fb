import { z } from 'zod';
import { DRIVER_NAMES } from '../drivers/registry';

/**
 * The plugin's platform configuration (the `SpeakerHub` block of Homebridge's config.json).
 * config.schema.json, the Homebridge UI form, is generated from this schema
 * (`npm run homebridge:schema`); a test fails when the two differ.
 */

export const SERVICE_KINDS = ['lightbulb', 'fan', 'switch', 'speaker'] as const;
export type ServiceKind = (typeof SERVICE_KINDS)[number];

const Service = z.enum(SERVICE_KINDS).meta({
  title: 'HomeKit service',
  description:
    'lightbulb: On = playing, Brightness = volume (a slider in the Home app, "set the kitchen speaker to 30 percent"). fan: On + RotationSpeed. switch: On only. speaker: Mute + Volume (Eve and other apps; the Home app does not show it).',
});

const DigitString = z.string().regex(/^\d{1,20}$/, 'must be digits');

const DefaultMedia = z
  .object({
    persistentId: DigitString.optional().meta({ title: 'Media item (PersistentID)', description: 'A hub media item, from media_list.' }),
    url: z.url().optional().meta({ title: 'Stream URL', description: 'A web stream (http, https).' }),
  })
  .strict()
  .meta({ title: 'What turning a speaker on plays when nothing is paused or playing' });

const SpeakerOverride = z
  .object({
    deviceId: DigitString.optional().meta({ title: 'DeviceID', description: 'The speaker, by DeviceID (see the log or device_list)…' }),
    name: z.string().min(1).optional().meta({ title: 'Speaker name', description: '…or by its DeviceName.' }),
    service: Service.optional(),
    defaultMedia: DefaultMedia.optional(),
    hidden: z.boolean().optional().meta({ title: 'Hide from HomeKit' }),
  })
  .strict();

const Announcement = z
  .object({
    name: z.string().min(1).max(64).meta({ title: 'Switch name', description: 'Shown in the Home app; turning the switch on announces.' }),
    text: z.string().min(1).max(1000).optional().meta({ title: 'Text to speak' }),
    mediaUrl: z.url().optional().meta({ title: 'Or a sound URL' }),
    persistentId: DigitString.optional().meta({ title: 'Or a hub media item (PersistentID)' }),
    speakers: z.array(z.string().min(1)).max(1000).optional().meta({ title: 'Speakers (DeviceIDs or names; empty: every available speaker)' }),
    volume: z.number().int().min(0).max(50).optional().meta({ title: 'Announcement volume (0–50)' }),
    chime: z.boolean().optional().meta({ title: 'Chime before speech' }),
    voice: z
      .string()
      .regex(/^[A-Za-z0-9_+:-]{1,64}$/, 'must be 1 to 64 letters, digits or _ + : -')
      .optional()
      .meta({ title: 'Voice (TTS voice or language for this announcement)' }),
    priority: z.number().int().optional().meta({ title: 'Priority' }),
    mode: z.enum(['interrupt', 'duck']).optional().meta({
      title: 'Music during the announcement',
      description:
        'interrupt (default): it stops and comes back after; duck: it goes on, lowered, under the voice (where the hub mixes the speaker’s audio; elsewhere it interrupts).',
    }),
    duckLevel: z.number().int().min(-40).max(0).optional().meta({ title: 'Duck by (dB, -40…0; default -15)' }),
    fadeMs: z.number().int().min(0).max(10_000).optional().meta({ title: 'Fade (ms; default 500)' }),
  })
  .strict();

const Rest = z
  .object({
    enabled: z.boolean().default(false).meta({ title: 'Run the REST server', description: 'So other automations reach the same hub.' }),
    host: z.string().min(1).default('0.0.0.0').meta({ title: 'Bind address' }),
    port: z.number().int().min(0).max(65535).default(8090).meta({ title: 'Port' }),
    token: z
      .string()
      .min(16)
      .optional()
      .meta({ title: 'API token', description: 'At least 16 characters; generated and kept in Homebridge storage when empty.' }),
  })
  .strict();

const Hub = z
  .object({
    mode: z.enum(['embedded', 'remote']).default('embedded').meta({
      title: 'Hub',
      description: 'embedded: the hub runs inside Homebridge. remote: a SpeakerHub running elsewhere (URL and token).',
    }),
    url: z.url().optional().meta({ title: 'Remote hub URL', description: 'The hub origin, e.g. http://192.168.1.20:8090' }),
    token: z.string().min(1).optional().meta({ title: 'Remote hub API token' }),
    drivers: z
      .array(z.enum(DRIVER_NAMES as [string, ...string[]]))
      .optional()
      .meta({
        title: 'Speaker drivers',
        description: 'upnp: UPnP/DLNA renderers; snapcast: snapclients of snapservers; virtual: test speakers. Nothing starts until one is chosen.',
      }),
    interface: z.string().min(1).optional().meta({ title: 'Network interface', description: 'For UPnP discovery and media serving, e.g. eth0.' }),
    renderers: z.array(z.url()).optional().meta({ title: 'UPnP renderer description URLs (no multicast needed)' }),
    snapcastServers: z.array(z.string().min(1)).optional().meta({ title: 'snapserver control addresses (host[:port])' }),
    virtualSpeakers: z.array(z.string().min(1)).max(100).optional().meta({ title: 'Virtual speaker names' }),
    mediaFolders: z.array(z.string().min(1)).optional().meta({ title: 'Music folders' }),
    samples: z.boolean().optional().meta({ title: 'Include the sample tracks' }),
    ttsProvider: z.enum(['espeak', 'voicerss', 'festival']).optional().meta({ title: 'Text-to-speech' }),
    ttsVoice: z.string().min(1).optional().meta({ title: 'Voice (espeak-ng voice, VoiceRSS language[:voice] or festival voice)' }),
    voicerssKey: z.string().min(1).optional().meta({ title: 'VoiceRSS key' }),
    rest: Rest.optional(),
    mqtt: z
      .looseObject({
        enabled: z.boolean().optional().meta({ title: 'MQTT on', description: 'Off: the hub runs without MQTT.' }),
        url: z.string().min(1).optional().meta({
          title: 'External broker URL',
          description: 'mqtt://host:port or mqtts://host:port. Empty: the hub runs its own broker.',
        }),
        username: z.string().min(1).optional().meta({ title: 'Broker username' }),
        password: z.string().min(1).optional().meta({ title: 'Broker password' }),
        port: z.number().int().min(0).max(65535).optional().meta({ title: 'Embedded broker port', description: 'Default 1883.' }),
        baseTopic: z.string().min(1).optional().meta({ title: 'Base topic', description: 'Default speakerhub.' }),
        haDiscovery: z.boolean().optional().meta({ title: 'Home Assistant discovery' }),
      })
      .optional()
      .meta({ title: 'MQTT', description: 'The hub’s MQTT (docs/mqtt.md); any other key of its mqtt block is accepted too.' }),
    logLevel: z.enum(['error', 'warn', 'info', 'debug']).default('info').meta({ title: 'Hub log level' }),
    // The UI shows a text box of JSON; a config file may hold the object itself.
    advanced: z
      .union([
        z.string().transform((text, ctx) => {
          if (!text.trim()) return {};
          try {
            const v: unknown = JSON.parse(text);
            if (typeof v === 'object' && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
          } catch {
            /* reported below */
          }
          ctx.addIssue({ code: 'custom', message: 'must be a JSON object, e.g. {"sessions": {"idleMinutes": 30}}' });
          return z.NEVER;
        }),
        z.record(z.string(), z.unknown()),
      ])
      .optional()
      .meta({
        title: 'Other hub settings (JSON)',
        description: 'Any key of the hub configuration (see the README) as a JSON object, merged over the settings above.',
      }),
  })
  .strict();

export const PlatformConfigSchema = z
  .object({
    platform: z.literal('SpeakerHub'),
    name: z.string().min(1).default('SpeakerHub').meta({ title: 'Name' }),
    hub: Hub.prefault({}),
    service: Service.default('lightbulb'),
    defaultMedia: DefaultMedia.optional(),
    speakers: z.array(SpeakerOverride).max(1000).default([]).meta({ title: 'Per-speaker settings' }),
    announcements: z.array(Announcement).max(50).default([]).meta({ title: 'Announcement switches' }),
    partySwitch: z
      .boolean()
      .default(false)
      .meta({ title: 'Party mode switch', description: 'A switch that plays on every available speaker together.' }),
    removeAfterHours: z.number().min(0).default(168).meta({
      title: 'Remove a speaker the hub no longer lists after (hours)',
      description: 'Its accessory (and the automations using it) survives short absences.',
    }),
    // Homebridge's own keys (child bridge settings) pass through untouched.
    _bridge: z.record(z.string(), z.unknown()).optional(),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.hub.mode === 'remote' && !c.hub.url)
      ctx.addIssue({ code: 'custom', path: ['hub', 'url'], message: 'is required when hub.mode is "remote"' });
    c.announcements.forEach((a, i) => {
      const n = [a.text, a.mediaUrl, a.persistentId].filter((v) => v !== undefined).length;
      if (n !== 1) ctx.addIssue({ code: 'custom', path: ['announcements', i], message: 'needs exactly one of text, mediaUrl, persistentId' });
    });
    c.speakers.forEach((s, i) => {
      if (!s.deviceId && !s.name) ctx.addIssue({ code: 'custom', path: ['speakers', i], message: 'needs deviceId or name' });
    });
    const names = new Set<string>();
    c.announcements.forEach((a, i) => {
      if (names.has(a.name)) ctx.addIssue({ code: 'custom', path: ['announcements', i, 'name'], message: `"${a.name}" is used twice` });
      names.add(a.name);
    });
  });

export type PlatformSettings = z.output<typeof PlatformConfigSchema>;
export type AnnouncementPreset = PlatformSettings['announcements'][number];
export type MediaChoice = NonNullable<PlatformSettings['defaultMedia']>;

/** Validates a platform block; the error lists every offending key (`hub.url: …`). */
export function parsePlatformConfig(input: unknown): { ok: true; config: PlatformSettings } | { ok: false; problems: string[] } {
  const r = PlatformConfigSchema.safeParse(input);
  if (r.success) return { ok: true, config: r.data };
  return {
    ok: false,
    problems: r.error.issues.map((i) => {
      const path = i.path.join('.');
      if (i.code === 'unrecognized_keys') return i.keys.map((k) => `${path ? `${path}.` : ''}${k}: unknown key`).join('; ');
      return `${path || '(root)'}: ${i.message}`;
    }),
  };
}
