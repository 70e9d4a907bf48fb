import { z } from 'zod';
import type { HubCore } from '../core/hub-core';
import { DEFAULT_PRIORITY, type PlayableMedia, type StopScope, type Target } from '../core/playback-engine';
import { SessionScopes } from '../core/session-scopes';
import {
  Bool,
  DeviceIDListParam,
  DeviceIDParam,
  MediaUrlParam,
  PersistentIDParam,
  PlaybackIDParam,
  PlaybackStateSchema,
  PriorityParam,
  ResultResponse,
  StartAtParam,
  TextParam,
  VoiceParam,
} from './schemas';
import { bool, define, EXAMPLE, ok, type OperationContext } from './define';

// ---- play_* and resume_*: one definition per media kind × target --------------------------

const TARGETS = [
  { suffix: '', kind: 'session', label: 'on the speakers of the playback session (fails if none is selected)' },
  { suffix: '_party_mode', kind: 'party', label: 'on every available speaker, whatever the session holds' },
  { suffix: '_selected_speakers', kind: 'selected', label: 'on the speakers in DeviceIDList' },
] as const;

const EXAMPLE_IDS = `${EXAMPLE.deviceId},${EXAMPLE.otherDeviceId}`;

function targetOf(hub: HubCore, kind: (typeof TARGETS)[number]['kind'], p: { DeviceIDList?: string[] }, ctx: OperationContext): Target {
  if (kind === 'party') return { kind };
  return { kind, deviceIds: kind === 'selected' ? p.DeviceIDList! : hub.scopes.selection(ctx.sessionKey!) };
}

function withTarget<S extends z.ZodRawShape>(
  kind: (typeof TARGETS)[number]['kind'],
  shape: S,
): z.ZodObject<S> | z.ZodObject<S & { DeviceIDList: typeof DeviceIDListParam }> {
  return kind === 'selected' ? z.object({ ...shape, DeviceIDList: DeviceIDListParam }) : z.object(shape);
}

const MEDIA_KINDS = [
  {
    name: 'play_hub_media',
    what: 'Plays a hub media item',
    shape: { PersistentID: PersistentIDParam, Priority: PriorityParam },
    example: { PersistentID: EXAMPLE.persistentId },
    load: (hub: HubCore, p: { PersistentID?: string }) => async (): Promise<PlayableMedia> => hub.hubMedia(p.PersistentID!),
  },
  {
    name: 'play_web_media',
    what: 'Plays web media (http, https, rtsp/rstp or mms URL)',
    note: ' Beyond the spec: StartAt (whole seconds, default 0) starts a file that far in; a live stream plays from its live edge on most speakers.',
    // StartAt: a control point's Play after Pause resumes a web file where it was (src/dlna/renderer.ts).
    shape: { MediaUrl: MediaUrlParam, Priority: PriorityParam, StartAt: StartAtParam },
    example: { MediaUrl: EXAMPLE.mediaUrl },
    load: (hub: HubCore, p: { MediaUrl?: string }) => async (): Promise<PlayableMedia> => hub.webMedia(p.MediaUrl!),
  },
  {
    name: 'play_tts',
    what: 'Speaks a text (text-to-speech)',
    // Voice (beyond the spec, optional): a TTS voice/language for this text.
    shape: { Text: TextParam, Priority: PriorityParam, Voice: VoiceParam },
    example: { Text: 'Dinner is ready' },
    load: (hub: HubCore, p: { Text?: string; Voice?: string }) => {
      hub.validateText(p.Text!);
      return () => hub.ttsMedia(p.Text!, p.Voice);
    },
  },
] as const;

export const plays = MEDIA_KINDS.flatMap((media) =>
  TARGETS.map((t) =>
    define({
      name: `${media.name}${t.suffix}`,
      group: 'playback',
      summary: `${media.what} ${t.label}. Optional Priority (default ${DEFAULT_PRIORITY}): a play with at least the current playback's priority interrupts it, a lower one is refused.${'note' in media ? media.note : ''}`,
      params: withTarget(t.kind, media.shape),
      response: ResultResponse,
      example: t.kind === 'selected' ? { ...media.example, DeviceIDList: EXAMPLE_IDS } : media.example,
      handler: async (hub, p: Record<string, unknown>, ctx) => {
        const priority = (p.Priority as number | undefined) ?? DEFAULT_PRIORITY;
        const load = media.load(hub, p); // validates the media parameters first
        const target = targetOf(hub, t.kind, p, ctx);
        const key = ctx.sessionKey!;
        const startAt = p.StartAt as number | undefined;
        const id = await hub.playback.play(target, priority, load, { owner: SessionScopes.label(key), ...(startAt ? { startAt } : {}) });
        hub.scopes.played(key, id, target.kind === 'party' ? [] : target.deviceIds);
        return ok;
      },
    }),
  ),
);

export const resumes = TARGETS.map((t) =>
  define({
    name: `resume_hub_media${t.suffix}`,
    group: 'playback',
    summary: `Resumes the paused hub media item ${t.label}. Only hub media can be resumed.`,
    params: withTarget(t.kind, { PersistentID: PersistentIDParam }),
    response: ResultResponse,
    example: t.kind === 'selected' ? { PersistentID: EXAMPLE.persistentId, DeviceIDList: EXAMPLE_IDS } : { PersistentID: EXAMPLE.persistentId },
    handler: async (hub, p: { PersistentID: string; DeviceIDList?: string[] }, ctx) => {
      await hub.playback.resume(p.PersistentID, targetOf(hub, t.kind, p, ctx), hub.scopes.playbackFor(ctx.sessionKey));
      return ok;
    },
  }),
);

// ---- transport, status and volume ---------------------------------------------------------

/**
 * Beyond the spec, on pause_play, stop_play and playback_status: name the playback (zone)
 * to act on, by its id or by a speaker in it, instead of the session's own (session-scopes.ts).
 */
const ZoneParams = z.object({ PlaybackID: PlaybackIDParam.optional(), DeviceID: DeviceIDParam.optional() });

/** The playback a transport or status operation means: PlaybackID, else DeviceID's, else the session's. */
function zoneOf(hub: HubCore, p: z.output<typeof ZoneParams>, ctx: OperationContext): string | undefined {
  if (p.PlaybackID !== undefined) return p.PlaybackID;
  if (p.DeviceID !== undefined) return hub.playback.playbackOf(hub.speakers.get(p.DeviceID).id);
  return hub.scopes.playbackFor(ctx.sessionKey);
}

/**
 * What stop_play stops: the named playback or speaker's; else the session's playback and its
 * own speakers (those it selected or played on: also what plays there outside any playback);
 * a session with no speakers of its own stops every playback, as on the original hub.
 */
function stopScope(hub: HubCore, p: z.output<typeof ZoneParams>, ctx: OperationContext): StopScope {
  if (p.PlaybackID !== undefined) return { playbackId: p.PlaybackID };
  if (p.DeviceID !== undefined) return { deviceIds: [hub.speakers.get(p.DeviceID).id] };
  const area = hub.scopes.area(ctx.sessionKey!);
  if (!area.length) return {};
  return { playbackId: hub.scopes.playbackFor(ctx.sessionKey), deviceIds: area };
}

export const transport = [
  define({
    name: 'pause_play',
    group: 'playback',
    summary:
      "Pauses the session's playback: hub media pauses; web media and TTS stop instead and cannot be resumed. Beyond the spec: PlaybackID or DeviceID names another playback (that one, or the one the speaker plays in).",
    params: ZoneParams,
    response: ResultResponse,
    handler: async (hub, p, ctx) => {
      await hub.playback.pause(zoneOf(hub, p, ctx));
      return ok;
    },
  }),
  define({
    name: 'stop_play',
    group: 'playback',
    summary:
      "Stops the session's playback (a session with no speakers of its own: every playback); it cannot be resumed. Succeeds when nothing plays, too. Beyond the spec: PlaybackID or DeviceID stops that playback, or the one the speaker plays in.",
    params: ZoneParams,
    response: ResultResponse,
    handler: async (hub, p, ctx) => {
      await hub.playback.stop(stopScope(hub, p, ctx));
      return ok;
    },
  }),
  define({
    name: 'playback_status',
    group: 'playback',
    summary:
      'PlaybackState and TimeElapsed (whole seconds; "-1" when stopped) of the session\'s playback. Beyond the spec: PlaybackID or DeviceID names another playback.',
    params: ZoneParams,
    response: z.object({ PlaybackState: PlaybackStateSchema, TimeElapsed: z.string().regex(/^-?\d+$/) }),
    handler: (hub, p, ctx) => {
      const s = hub.playback.status(zoneOf(hub, p, ctx));
      return { PlaybackState: s.state, TimeElapsed: String(s.timeElapsed) };
    },
  }),
  define({
    // Beyond the specification: playback_status keeps the spec's two fields, so clients of the
    // original hub see no change; a page or a CLI that shows the session needs this instead.
    name: 'session_status',
    group: 'playback',
    beyondSpec: true,
    summary:
      'Beyond the spec: the playback session and what plays. SelectedDeviceIDList: the speakers in the session (add_device_to_session, set_party_mode); PlaybackState and TimeElapsed as playback_status; while something plays or is paused, MediaKind (hub, web, tts), Title (the media title, the web URL, or the spoken text), MediaUrl (web media, without its secrets), PersistentID (hub media) and PlayingDeviceIDList (the speakers playing it).',
    response: z.object({
      SelectedDeviceIDList: z.string(),
      PlaybackState: PlaybackStateSchema,
      TimeElapsed: z.string().regex(/^-?\d+$/),
      MediaKind: z.enum(['hub', 'web', 'tts']).optional(),
      Title: z.string().optional(),
      MediaUrl: z.string().optional(),
      PersistentID: z.string().optional(),
      PlayingDeviceIDList: z.string(),
      PlaybackID: z.string().optional(),
    }),
    handler: (hub, _p, ctx) => {
      const s = hub.playback.snapshot(hub.scopes.playbackFor(ctx.sessionKey));
      const playing = s.state !== 'PlayerStateStopped';
      return {
        SelectedDeviceIDList: hub.scopes.selection(ctx.sessionKey!).join(','),
        ...(playing && s.playbackId ? { PlaybackID: s.playbackId } : {}),
        PlaybackState: s.state,
        TimeElapsed: String(s.timeElapsed),
        ...(playing && s.kind ? { MediaKind: s.kind } : {}),
        ...(playing && s.title !== undefined ? { Title: s.title } : {}),
        ...(playing && s.url !== undefined ? { MediaUrl: s.url } : {}),
        ...(playing && s.persistentId !== undefined ? { PersistentID: s.persistentId } : {}),
        PlayingDeviceIDList: playing ? s.deviceIds.join(',') : '',
      };
    },
  }),
  define({
    // Beyond the specification: the zones. Each session's transport operations act on one
    // playback (session-scopes.ts); this lists them all, for pages, the CLI and automations.
    name: 'playback_list',
    group: 'playback',
    beyondSpec: true,
    summary:
      'Beyond the spec: every playback (zone) running now, oldest first: PlaybackID, PlaybackState, TimeElapsed (seconds), MediaKind, Title, MediaUrl (web media, without its secrets), PersistentID (hub media), Priority, DeviceIDList (its speakers), StartedBy (the label of the session that started it) and Since (when, ISO 8601).',
    response: z.object({
      PlaybackList: z.array(
        z.object({
          PlaybackID: z.string(),
          PlaybackState: PlaybackStateSchema,
          TimeElapsed: z.number().int(),
          MediaKind: z.enum(['hub', 'web', 'tts']),
          Title: z.string().optional(),
          MediaUrl: z.string().optional(),
          PersistentID: z.string().optional(),
          Priority: z.number().int(),
          DeviceIDList: z.array(z.string()),
          StartedBy: z.string().optional(),
          Since: z.string(),
        }),
      ),
    }),
    handler: (hub) => ({
      PlaybackList: hub.playback.list().map((s) => ({
        PlaybackID: s.playbackId!,
        PlaybackState: s.state,
        TimeElapsed: s.timeElapsed,
        MediaKind: s.kind!,
        ...(s.title !== undefined ? { Title: s.title } : {}),
        ...(s.url !== undefined ? { MediaUrl: s.url } : {}),
        ...(s.persistentId !== undefined ? { PersistentID: s.persistentId } : {}),
        Priority: s.priority!,
        DeviceIDList: s.deviceIds,
        ...(s.owner !== undefined ? { StartedBy: s.owner } : {}),
        Since: s.since!,
      })),
    }),
  }),
  define({
    name: 'is_playing',
    group: 'playback',
    summary: "Whether the session's playback is playing now (a paused one is not).",
    response: z.object({ IsPlaying: Bool }),
    handler: (hub, _p, ctx) => ({ IsPlaying: bool(hub.playback.isPlaying(hub.scopes.playbackFor(ctx.sessionKey))) }),
  }),
];
