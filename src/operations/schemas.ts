import { z } from 'zod';
import { parseInteger, unquote } from '../util/values';
import { ANNOUNCEMENT_REASON_CODES } from '../core/announcement-reasons';

/**
 * Parameter and response schemas shared by the operations. Parameters arrive as strings
 * (query strings) or as JSON values (MQTT, Node-RED), so each accepts both and yields the
 * typed value; responses are the exact wire types of compatibility.md.
 */

/** Accepts a string, or a number/boolean that a JSON front end sent, as text. */
const text = () => z.preprocess((v) => (typeof v === 'number' || typeof v === 'boolean' ? String(v) : v), z.string());

/**
 * An integer parameter under the one number rule (src/util/values.ts): quotes stripped,
 * optional sign, leading zeros allowed; the message states the range. The final pipe keeps
 * the range visible to schema readers (OpenAPI).
 */
const integer = (name: string, min: number, max: number) =>
  text()
    .pipe(
      z.string().transform((v, ctx) => {
        const r = parseInteger(v, name, min, max);
        if (r.ok) return r.value;
        ctx.addIssue({ code: 'custom', message: r.message });
        return z.NEVER;
      }),
    )
    .pipe(z.number().int().min(min).max(max));

export const digitString = (name: string, max = 40) =>
  text().pipe(
    z
      .string()
      .transform(unquote)
      .pipe(z.string().regex(new RegExp(`^\\d{1,${max}}$`), `${name} must be a string of 1 to ${max} digits`)),
  );

export const SessionTokenParam = text().pipe(z.string().transform(unquote).pipe(z.string().min(1, 'SessionToken is empty').max(256)));
export const DeviceIDParam = digitString('DeviceID', 32);
export const PersistentIDParam = digitString('PersistentID', 40);
/** A playback (zone) as playback_list and events name it. */
export const PlaybackIDParam = text().pipe(
  z
    .string()
    .transform(unquote)
    .pipe(z.string().regex(/^pb-\d{1,12}$/, 'PlaybackID must look like pb-12 (see playback_list)')),
);

export const DeviceIDListParam = text().pipe(
  z
    .string()
    .transform((v) =>
      unquote(v)
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    )
    .pipe(
      z
        .array(z.string().regex(/^\d{1,32}$/, 'each DeviceIDList entry must be a DeviceID (digits)'))
        .min(1, 'DeviceIDList names no DeviceID')
        .max(1000, 'DeviceIDList names more than 1000 speakers')
        .transform((ids) => [...new Set(ids)]),
    ),
);

export const ALLOWED_SCHEMES = ['http:', 'https:', 'rtsp:', 'rstp:', 'mms:'] as const;

export const MediaUrlParam = text().pipe(
  z
    .string()
    .transform(unquote)
    .pipe(z.string().min(1, 'MediaUrl is empty').max(4096, 'MediaUrl is longer than 4096 characters'))
    .superRefine((v, ctx) => {
      let url: URL;
      try {
        url = new URL(v);
      } catch {
        ctx.addIssue({ code: 'custom', message: 'MediaUrl is not an absolute URL' });
        return;
      }
      if (!(ALLOWED_SCHEMES as readonly string[]).includes(url.protocol)) {
        ctx.addIssue({
          code: 'custom',
          message: `MediaUrl scheme ${url.protocol} is not supported; use http, https, rtsp (or rstp) or mms`,
          params: { errorCode: 'UnsupportedScheme' },
        });
      }
    }),
);

/** The hard cap keeps requests bounded; the configured limit (tts.maxTextLength) is checked by TTS. */
export const TextParam = text().pipe(z.string().transform(unquote).pipe(z.string().min(1, 'Text is empty').max(100_000, 'Text is far too long')));

export { VOLUME_MIN, VOLUME_MAX } from '../core/volume-range';
import { VOLUME_MIN, VOLUME_MAX } from '../core/volume-range';
export const VolumeParam = integer('Volume', VOLUME_MIN, VOLUME_MAX);

/** A 32-bit signed integer, as the original hub's clients send. */
export const PRIORITY_MIN = -2147483648;
export const PRIORITY_MAX = 2147483647;
export const PriorityParam = integer('Priority', PRIORITY_MIN, PRIORITY_MAX).optional();
/** Beyond the spec: whole seconds into web media to start at (a day at most). */
export const START_AT_MAX = 86_400;
export const StartAtParam = integer('StartAt', 0, START_AT_MAX).optional();

// ---- responses ---------------------------------------------------------------------------

export const Bool = z.enum(['true', 'false']);

/** on/off (or true/false, any case) as a boolean: the speaker commands' switches. */
export const OnOffParam = text()
  .pipe(z.string().transform((v) => unquote(v).trim().toLowerCase()))
  .pipe(z.enum(['on', 'off', 'true', 'false'], { message: 'must be on or off' }))
  .transform((v) => v === 'on' || v === 'true');
export const ResultResponse = z.object({ Result: Bool });

export const DeviceSchema = z.object({
  DeviceID: z.string().regex(/^\d+$/),
  DeviceName: z.string(),
  GroupName: z.string(),
  GroupID: z.string().regex(/^\d*$/),
  ModelName: z.string(),
  Version: z.string(),
  Role: z.number().int(),
  MacAddress: z.string(),
  IPAddress: z.string(),
  Port: z.number().int(),
  Active: z.boolean(),
  IsPlaying: z.boolean(),
  Volume: z.number().int().min(0).max(50),
  WifiSignalStrength: z.number().int(),
});

export const MediaItemSchema = z.object({
  PersistentID: z.string().regex(/^\d+$/),
  Title: z.string(),
  Artist: z.string(),
  AlbumTitle: z.string(),
  Duration: z.number().int().min(0),
});

export const PlaybackStateSchema = z.enum(['PlayerStatePlaying', 'PlayerStatePaused', 'PlayerStateStopped']);

// ---- announcements (beyond the spec) -------------------------------------------------------

/** Chime: "true"/"false" (the built-in chime) or a PersistentID (hub media played first). */
export const ChimeParam = text()
  .pipe(
    z
      .string()
      .transform(unquote)
      .pipe(z.string().regex(/^(true|false|\d{1,40})$/i, 'Chime must be true, false or a PersistentID'))
      .transform((v): boolean | string => (/^true$/i.test(v) ? true : /^false$/i.test(v) ? false : v)),
  )
  .optional();

/** A TTS voice/language: espeak-ng voices ("en-us", "de"), VoiceRSS "language[:voice]". */
export const VoiceParam = text()
  .pipe(
    z
      .string()
      .transform(unquote)
      .pipe(z.string().regex(/^[A-Za-z0-9_+:-]{1,64}$/, 'Voice must be 1 to 64 letters, digits or _ + : -')),
  )
  .optional();

/** announce's Mode: interrupt (the music stops and comes back) or duck (it goes on, lowered, under the voice). */
export const AnnouncementModeParam = text()
  .pipe(z.string().transform((v) => unquote(v).trim().toLowerCase()))
  .pipe(z.enum(['interrupt', 'duck'], { message: 'Mode must be interrupt or duck' }))
  .optional();
/** dB the music goes down under a ducked announcement. */
export const DUCK_LEVEL_MIN = -40;
export const DUCK_LEVEL_MAX = 0;
export const DuckLevelParam = integer('DuckLevel', DUCK_LEVEL_MIN, DUCK_LEVEL_MAX).optional();
/** Fade down/up time of a ducked announcement, ms. */
export const FadeMsParam = integer('FadeMs', 0, 10_000).optional();
export const AnnouncementModeSchema = z.enum(['interrupt', 'duck']);

export const AnnouncementIDParam = text().pipe(
  z
    .string()
    .transform(unquote)
    .pipe(z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'AnnouncementID must be the id announce returned')),
);

export const AnnouncementStateSchema = z.enum(['queued', 'playing', 'waiting_restore', 'done', 'failed']);

/** announcement_status's ReasonCode: the typed codes of src/core/announcement-reasons.ts. */
export const AnnouncementReasonCodeSchema = z.enum(ANNOUNCEMENT_REASON_CODES);
