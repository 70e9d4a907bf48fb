import { z } from 'zod';
import { HubError } from '../core/errors';
import type { HubCore } from '../core/hub-core';
import { DEFAULT_PRIORITY, type PlayableMedia, type StopScope, type Target } from '../core/playback-engine';
import { SessionScopes } from '../core/session-scopes';
import {
  AnnouncementIDParam,
  AnnouncementReasonCodeSchema,
  AnnouncementStateSchema,
  Bool,
  ChimeParam,
  AnnouncementModeParam,
  AnnouncementModeSchema,
  DuckLevelParam,
  FadeMsParam,
  VoiceParam,
  DeviceIDListParam,
  DeviceIDParam,
  DeviceSchema,
  MediaItemSchema,
  MediaUrlParam,
  OnOffParam,
  PersistentIDParam,
  PlaybackIDParam,
  PlaybackStateSchema,
  PriorityParam,
  ResultResponse,
  TextParam,
  VolumeParam,
} from './schemas';

/**
 * THE operation table: every operation of the Speaker Control Service, defined once. REST
 * routes, OpenAPI, the client, and the other front ends are generated from it by a loop.
 */

export type OperationGroup = 'session' | 'device' | 'playback' | 'volume' | 'announcement';

export interface OperationContext {
  /** The caller's SessionToken (already checked and renewed), for session operations. */
  sessionToken?: string;
  /** The session's key in the table (the token's SHA-256): what the session scopes key on. */
  sessionKey?: string;
}

export interface Operation<N extends string = string, P extends z.ZodObject = z.ZodObject, R extends z.ZodType = z.ZodType> {
  name: N;
  group: OperationGroup;
  summary: string;
  /** False only for init_session. */
  needsSession: boolean;
  /** Cloud mode adds ResponseOf to these responses (spec, Conventions). */
  cloudResponseOf: boolean;
  /** Parameters other than SessionToken. */
  params: P;
  response: R;
  /** An example request's parameters, for the docs ("$X" names a shell variable an earlier example set). */
  example: Record<string, string>;
  /** For the docs' example script: the shell variable this example's answer sets, from which field. */
  exampleCaptures?: { variable: string; field: string };
  /** Not in the Speaker Control Service spec (SpeakerHub's own additions). */
  beyondSpec?: boolean;
  // Method syntax on purpose: a typed entry (Operation<'set_volume', …>) stays assignable to
  // the general Operation that front ends loop over.
  handler(hub: HubCore, params: z.output<P>, ctx: OperationContext): Promise<z.input<R>> | z.input<R>;
}

/** An entry of the table: what is particular to the operation; define() fills the rest. */
type OperationSpec<N extends string, P extends z.ZodObject, R extends z.ZodType> = Omit<
  Operation<N, P, R>,
  'needsSession' | 'cloudResponseOf' | 'params' | 'example'
> &
  Partial<Pick<Operation<N, P, R>, 'needsSession' | 'params' | 'example'>>;

/** Fills the common defaults and keeps the entry's types: its literal name, parameter and response schemas. */
function define<const N extends string, P extends z.ZodObject = typeof NoParams, R extends z.ZodType = z.ZodType>(
  spec: OperationSpec<N, P, R>,
): Operation<N, P, R> {
  return {
    needsSession: true,
    // Without params the entry takes none; P then is typeof NoParams (its default).
    params: NoParams as unknown as P,
    example: {},
    ...spec,
    cloudResponseOf: RESPONSE_OF.has(spec.name),
  };
}

/**
 * IDs the documentation's examples use, valid on every default hub (so every README example
 * runs as written): the first two virtual speakers (DeviceIDs derived from "virtual:1" and
 * "virtual:2"), the first sample track (its PersistentID depends on its file name only), and
 * the second sample as web media served by the hub itself.
 */
export const EXAMPLE = {
  deviceId: '12106658486352',
  otherDeviceId: '25350427372477',
  persistentId: '5993970893696861521',
  mediaUrl: 'http://127.0.0.1:8090/samples/sample-tone-2-little-waltz.wav',
} as const;

const ok = { Result: 'true' } as const;
const bool = (b: boolean): 'true' | 'false' => (b ? 'true' : 'false');
const NoParams = z.object({});

/** Operations whose responses carry ResponseOf in cloud mode (spec, Conventions). */
const RESPONSE_OF = new Set([
  'init_session',
  'set_party_mode',
  'device_list',
  'add_device_to_session',
  'play_hub_media',
  'play_hub_media_selected_speakers',
  'play_web_media_party_mode',
  'stop_play',
  'set_volume',
]);

// ---- session and devices ------------------------------------------------------------------

const sessionAndDevices = [
  define({
    name: 'init_session',
    group: 'session',
    summary: 'Starts a session and returns its SessionToken (and the hub UUID, HKWHubUUID).',
    needsSession: false,
    response: z.object({ SessionToken: z.string(), HKWHubUUID: z.string() }),
    // Answered once the new session is on disk (sessions.persist), so a crash right after cannot lose it.
    handler: async (hub) => {
      const token = hub.sessions.create();
      await hub.sessions.committed();
      return { SessionToken: token, HKWHubUUID: hub.uuid };
    },
  }),
  define({
    name: 'close_session',
    group: 'session',
    summary: 'Closes the session; its token is removed from the session table.',
    response: ResultResponse,
    // Answered once the closing is on disk: a closed session never comes back after a crash.
    handler: async (hub, _p, ctx) => {
      hub.scopes.forget(hub.sessions.close(ctx.sessionToken!));
      await hub.sessions.committed();
      return ok;
    },
  }),
  define({
    name: 'device_count',
    group: 'device',
    summary: 'Number of speakers the hub knows (the length of device_list, available or not).',
    response: z.object({ DeviceCount: z.string().regex(/^\d+$/) }),
    handler: (hub) => ({ DeviceCount: String(hub.speakers.size) }),
  }),
  define({
    name: 'device_list',
    group: 'device',
    summary: 'Every speaker with all device fields.',
    response: z.object({ DeviceList: z.array(DeviceSchema) }),
    handler: (hub) => ({ DeviceList: hub.speakers.all().map((s) => hub.speakers.record(s)) }),
  }),
  define({
    name: 'device_info',
    group: 'device',
    summary: 'One speaker, as a bare device object.',
    params: z.object({ DeviceID: DeviceIDParam }),
    response: DeviceSchema,
    example: { DeviceID: EXAMPLE.deviceId },
    handler: (hub, p) => hub.speakers.record(hub.speakers.get(p.DeviceID)),
  }),
  define({
    name: 'add_device_to_session',
    group: 'device',
    summary: 'Adds a speaker to the playback session; if something is playing, it joins in.',
    params: z.object({ DeviceID: DeviceIDParam }),
    response: ResultResponse,
    example: { DeviceID: EXAMPLE.deviceId },
    handler: async (hub, p, ctx) => {
      // "The added speaker plays the music": the session's playback as it was before the add.
      const playing = hub.scopes.playbackFor(ctx.sessionKey);
      hub.scopes.add(ctx.sessionKey!, p.DeviceID);
      await hub.playback.join(playing, [p.DeviceID]);
      return ok;
    },
  }),
  define({
    name: 'remove_device_from_session',
    group: 'device',
    summary: 'Removes a speaker from the playback session; it stops playing, the others play on.',
    params: z.object({ DeviceID: DeviceIDParam }),
    response: ResultResponse,
    example: { DeviceID: EXAMPLE.deviceId },
    handler: async (hub, p, ctx) => {
      const playing = hub.scopes.playbackFor(ctx.sessionKey);
      hub.scopes.remove(ctx.sessionKey!, p.DeviceID);
      // It stops if it plays in the session's playback; another zone's speaker is left alone.
      if (playing !== undefined && hub.playback.playbackOf(p.DeviceID) === playing) await hub.playback.leave(p.DeviceID);
      return ok;
    },
  }),
  define({
    name: 'set_party_mode',
    group: 'device',
    summary: 'Adds every available speaker to the playback session; if something is playing, they all join in.',
    response: ResultResponse,
    handler: async (hub, _p, ctx) => {
      const playing = hub.scopes.playbackFor(ctx.sessionKey);
      hub.scopes.addAll(ctx.sessionKey!);
      const selected = hub.scopes.selection(ctx.sessionKey!);
      if (!selected.length) throw new HubError('NoSpeakerAvailable', 'No speaker is available to add.');
      // Every selected speaker plays what plays, also one selected before but left out of a DeviceIDList play.
      await hub.playback.join(playing, selected);
      return ok;
    },
  }),
  define({
    name: 'media_list',
    group: 'playback',
    summary: 'The hub media library.',
    response: z.object({ MediaList: z.array(MediaItemSchema) }),
    handler: (hub) => ({
      MediaList: hub.catalog.list().map((m) => ({
        PersistentID: m.persistentId,
        Title: m.title,
        Artist: m.artist,
        AlbumTitle: m.album,
        Duration: m.duration,
      })),
    }),
  }),
  define({
    // Beyond the specification (docs/spec-operations.md): files added to a media folder
    // are found by the folder watcher; this is for scripts that want them listed now.
    name: 'rescan_media',
    group: 'playback',
    beyondSpec: true,
    summary: 'Beyond the spec: rescans the media folders now; answers when the new library is in place, with its item count.',
    response: z.object({ Result: Bool, MediaCount: z.string().regex(/^\d+$/) }),
    handler: async (hub) => {
      await hub.catalog.rescan();
      return { Result: 'true' as const, MediaCount: String(hub.catalog.list().length) };
    },
  }),
];

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
    shape: { MediaUrl: MediaUrlParam, Priority: PriorityParam },
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

const plays = MEDIA_KINDS.flatMap((media) =>
  TARGETS.map((t) =>
    define({
      name: `${media.name}${t.suffix}`,
      group: 'playback',
      summary: `${media.what} ${t.label}. Optional Priority (default ${DEFAULT_PRIORITY}): a play with at least the current playback's priority interrupts it, a lower one is refused.`,
      params: withTarget(t.kind, media.shape),
      response: ResultResponse,
      example: t.kind === 'selected' ? { ...media.example, DeviceIDList: EXAMPLE_IDS } : media.example,
      handler: async (hub, p: Record<string, unknown>, ctx) => {
        const priority = (p.Priority as number | undefined) ?? DEFAULT_PRIORITY;
        const load = media.load(hub, p); // validates the media parameters first
        const target = targetOf(hub, t.kind, p, ctx);
        const key = ctx.sessionKey!;
        const id = await hub.playback.play(target, priority, load, { owner: SessionScopes.label(key) });
        hub.scopes.played(key, id, target.kind === 'party' ? [] : target.deviceIds);
        return ok;
      },
    }),
  ),
);

const resumes = TARGETS.map((t) =>
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

const transportAndVolume = [
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
  define({
    name: 'get_volume',
    group: 'volume',
    summary: 'The average volume of the available speakers, rounded half up.',
    response: z.object({ Volume: z.string().regex(/^\d+$/) }),
    handler: (hub) => ({ Volume: String(hub.volume.average()) }),
  }),
  define({
    name: 'get_volume_device',
    group: 'volume',
    summary: "One speaker's volume.",
    params: z.object({ DeviceID: DeviceIDParam }),
    response: z.object({ Volume: z.string().regex(/^\d+$/) }),
    example: { DeviceID: EXAMPLE.deviceId },
    handler: (hub, p) => ({ Volume: String(hub.volume.of(p.DeviceID)) }),
  }),
  define({
    name: 'set_volume',
    group: 'volume',
    summary: 'Sets every available speaker to Volume (0–50).',
    params: z.object({ Volume: VolumeParam }),
    response: ResultResponse,
    example: { Volume: '25' },
    handler: async (hub, p) => {
      await hub.volume.setAll(p.Volume);
      return ok;
    },
  }),
  define({
    name: 'set_volume_device',
    group: 'volume',
    summary: 'Sets one speaker to Volume (0–50).',
    params: z.object({ DeviceID: DeviceIDParam, Volume: VolumeParam }),
    response: ResultResponse,
    example: { DeviceID: EXAMPLE.deviceId, Volume: '25' },
    handler: async (hub, p) => {
      await hub.volume.set(p.DeviceID, p.Volume);
      return ok;
    },
  }),
];

// ---- announcements (beyond the spec) ------------------------------------------------------

const announcements = [
  define({
    name: 'announce',
    group: 'announcement',
    beyondSpec: true,
    summary:
      "Beyond the spec. Speaks Text (or plays MediaUrl or PersistentID) on DeviceIDList (default: every available speaker) as an overlay, then puts every speaker back as it was (music rejoins in sync; volume, mute, other apps' media restored). Optional Volume (0–50, the level while it speaks), Chime (true/false or a PersistentID played first; default false), Priority (default 100: lower than the music on a target is refused; a higher one cuts in on announcements, others queue), Voice (TTS voice), Mode (interrupt, the default: the music stops on the targets and comes back after; duck: it goes on under the voice, DuckLevel dB lower (-40..0, default -15), fading over FadeMs (0–10000, default 500); only where the hub mixes the speaker's audio, elsewhere it interrupts and announcement_status says why). The chime, a 300 ms gap and the speech play as one clip, at the configured loudness (announcements.loudness, default -16 LUFS). Answers at once with the AnnouncementID.",
    params: z.object({
      Text: TextParam.optional(),
      MediaUrl: MediaUrlParam.optional(),
      PersistentID: PersistentIDParam.optional(),
      DeviceIDList: DeviceIDListParam.optional(),
      Volume: VolumeParam.optional(),
      Chime: ChimeParam,
      Priority: PriorityParam,
      Voice: VoiceParam,
      Mode: AnnouncementModeParam,
      DuckLevel: DuckLevelParam,
      FadeMs: FadeMsParam,
    }),
    response: z.object({ Result: Bool, AnnouncementID: z.string() }),
    example: { Text: 'Dinner is ready', Volume: '30', Chime: 'true' },
    exampleCaptures: { variable: 'A', field: 'AnnouncementID' },
    handler: async (hub, p) => {
      const sources = (['Text', 'MediaUrl', 'PersistentID'] as const).filter((k) => p[k] !== undefined);
      if (p.Text !== undefined) hub.validateText(p.Text);
      if (sources.length !== 1) {
        throw new HubError('InvalidParameter', 'announce needs exactly one of Text, MediaUrl or PersistentID.', { parameter: sources[1] ?? 'Text' });
      }
      // Media that cannot exist fails now; synthesis and the clip (chime, gap, speech) happen in the background, before any speaker is touched.
      const load = await hub.announcementMedia({
        text: p.Text,
        voice: p.Voice,
        persistentId: p.PersistentID,
        mediaUrl: p.MediaUrl,
        chime: p.Chime,
      });
      const status = hub.announcements.announce({
        deviceIds: p.DeviceIDList,
        volume: p.Volume,
        priority: p.Priority ?? DEFAULT_PRIORITY,
        mode: p.Mode,
        duckLevel: p.DuckLevel,
        fadeMs: p.FadeMs,
        load,
      });
      return { Result: 'true' as const, AnnouncementID: status.id };
    },
  }),
  define({
    name: 'announcement_status',
    group: 'announcement',
    beyondSpec: true,
    summary:
      "Beyond the spec. An announcement's State: queued, playing, waiting_restore (it has finished on every speaker, which are not put back yet: the restore runs, or waits for announcements queued behind it on the same speaker), done (played and every speaker restored) or failed (Reason says why, ReasonCode as a stable code); RestoreLimits says what the restore cannot put back on some speakers (AirPlay: another sender's stream; Snapcast without an announcement stream: the music of the server's other clients, held while it plays); Mode the mode it plays in, ModeReason why it is not the one asked for (duck on a speaker whose driver cannot mix); unknown IDs are AnnouncementNotFound.",
    params: z.object({ AnnouncementID: AnnouncementIDParam }),
    response: z.object({
      AnnouncementID: z.string(),
      State: AnnouncementStateSchema,
      DeviceIDList: z.string(),
      Priority: z.string(),
      /** The mode it plays in (duck only where every target's driver mixes). */
      Mode: AnnouncementModeSchema,
      /** Why Mode is not the one asked for. */
      ModeReason: z.string().optional(),
      Reason: z.string().optional(),
      /** Reason as a stable code (the text may change): stopped_by_play, hub_shutdown, interrupted, load_failed, play_failed, never_played. */
      ReasonCode: AnnouncementReasonCodeSchema.optional(),
      /** What the restore cannot put back on some of its speakers (their driver says so), once each. */
      RestoreLimits: z.string().optional(),
    }),
    example: { AnnouncementID: '$A' },
    handler: (hub, p) => {
      const s = hub.announcements.status(p.AnnouncementID);
      const limits = [...new Set(s.deviceIds.map((id) => hub.speakers.find(id)?.capabilities?.restoreLimit).filter((l): l is string => !!l))];
      return {
        AnnouncementID: s.id,
        State: s.state,
        DeviceIDList: s.deviceIds.join(','),
        Priority: String(s.priority),
        Mode: s.mode,
        ...(s.modeReason ? { ModeReason: s.modeReason } : {}),
        ...(s.reason ? { Reason: s.reason } : {}),
        ...(s.reasonCode ? { ReasonCode: s.reasonCode } : {}),
        ...(limits.length ? { RestoreLimits: limits.join('; ') } : {}),
      };
    },
  }),
];

// ---- speaker commands (beyond the spec) ----------------------------------------------------
// What "turn this speaker off", "mute" and "party" mean, defined once for every front end
// (MQTT's per-speaker topics, HomeKit's switches, Node-RED, the DLNA renderers): each is
// expressed in the spec's own operations, so its effects are the ones those document.

/** Runs another entry of the table with wire parameters (validated as that operation validates them). */
async function call(hub: HubCore, name: string, params: Record<string, unknown>, ctx: OperationContext): Promise<unknown> {
  const op = OPERATIONS_BY_NAME.get(name)!;
  return op.handler(hub, op.params.parse(params), ctx);
}

/** What to play when a command needs something and nothing plays: the given media, else the library's first item. */
function defaultMedia(hub: HubCore, p: { PersistentID?: string; MediaUrl?: string }): { MediaUrl: string } | { PersistentID: string } {
  if (p.MediaUrl !== undefined) return { MediaUrl: p.MediaUrl };
  if (p.PersistentID !== undefined) return { PersistentID: p.PersistentID };
  const first = hub.catalog.list()[0];
  if (!first) throw new HubError('MediaNotFound', 'Nothing to play: the media library is empty and no PersistentID or MediaUrl was given.');
  return { PersistentID: first.persistentId };
}

const speakerCommands = [
  define({
    name: 'set_mute_device',
    group: 'volume',
    beyondSpec: true,
    summary:
      'Beyond the spec. Mutes (Mute=true) or unmutes one speaker. A speaker with a mute of its own keeps its volume; on one without, mute is volume 0 and unmute puts back the volume it had.',
    params: z.object({ DeviceID: DeviceIDParam, Mute: OnOffParam }),
    response: ResultResponse,
    example: { DeviceID: EXAMPLE.deviceId, Mute: 'true' },
    handler: async (hub, p) => {
      await hub.volume.setMute(p.DeviceID, p.Mute);
      return ok;
    },
  }),
  define({
    name: 'get_mute_device',
    group: 'volume',
    beyondSpec: true,
    summary: 'Beyond the spec. Whether one speaker is muted (its own mute, or volume 0 set by set_mute_device).',
    params: z.object({ DeviceID: DeviceIDParam }),
    response: z.object({ Mute: Bool }),
    example: { DeviceID: EXAMPLE.deviceId },
    handler: (hub, p) => ({ Mute: bool(hub.volume.muted(p.DeviceID)) }),
  }),
  define({
    name: 'set_speaker_power',
    group: 'device',
    beyondSpec: true,
    summary:
      'Beyond the spec. Power=off: a speaker playing alone pauses (hub media; web media and TTS stop); one sharing the playback leaves it and the others play on. Power=on: paused hub media resumes on it; a running playback takes it in; otherwise it plays MediaUrl or PersistentID (default: the first library item).',
    params: z.object({ DeviceID: DeviceIDParam, Power: OnOffParam, PersistentID: PersistentIDParam.optional(), MediaUrl: MediaUrlParam.optional() }),
    response: ResultResponse,
    example: { DeviceID: EXAMPLE.deviceId, Power: 'on' },
    handler: async (hub, p, ctx) => {
      const speaker = hub.speakers.get(p.DeviceID);
      if (!speaker.available) throw new HubError('DeviceUnavailable', `Speaker ${p.DeviceID} is not available.`, { parameter: 'DeviceID' });
      // The speaker's own zone; the other rooms are never touched.
      const zone = hub.playback.playbackOf(p.DeviceID);
      const pb = hub.playback.snapshot(zone);
      if (!p.Power) {
        if (pb.state !== 'PlayerStatePlaying') return ok;
        if (pb.deviceIds.length === 1) await hub.playback.pause(zone);
        else {
          if (ctx.sessionKey !== undefined) hub.scopes.remove(ctx.sessionKey, p.DeviceID);
          await hub.playback.leave(p.DeviceID);
        }
        return ok;
      }
      if (pb.state === 'PlayerStatePlaying') return ok;
      const sessions = hub.playback.snapshot(hub.scopes.playbackFor(ctx.sessionKey));
      if (pb.state === 'PlayerStatePaused' && pb.kind === 'hub' && pb.persistentId) {
        await call(hub, 'resume_hub_media_selected_speakers', { PersistentID: pb.persistentId, DeviceIDList: p.DeviceID }, ctx);
      } else if (sessions.state === 'PlayerStatePlaying') {
        await call(hub, 'add_device_to_session', { DeviceID: p.DeviceID }, ctx);
      } else {
        const media = defaultMedia(hub, p);
        if ('MediaUrl' in media) await call(hub, 'play_web_media_selected_speakers', { ...media, DeviceIDList: p.DeviceID }, ctx);
        else await call(hub, 'play_hub_media_selected_speakers', { ...media, DeviceIDList: p.DeviceID }, ctx);
      }
      return ok;
    },
  }),
  define({
    name: 'set_party',
    group: 'device',
    beyondSpec: true,
    summary:
      'Beyond the spec. Party=on: every available speaker plays together, joining what plays, else playing MediaUrl or PersistentID (default: the first library item). Party=off: stops the playback.',
    params: z.object({ Party: OnOffParam, PersistentID: PersistentIDParam.optional(), MediaUrl: MediaUrlParam.optional() }),
    response: ResultResponse,
    example: { Party: 'on' },
    handler: async (hub, p, ctx) => {
      if (!p.Party) await call(hub, 'stop_play', {}, ctx);
      else if (hub.playback.isPlaying(hub.scopes.playbackFor(ctx.sessionKey))) await call(hub, 'set_party_mode', {}, ctx);
      else {
        const media = defaultMedia(hub, p);
        await call(hub, 'MediaUrl' in media ? 'play_web_media_party_mode' : 'play_hub_media_party_mode', media, ctx);
      }
      return ok;
    },
  }),
];

const TABLE = [...sessionAndDevices, ...plays, ...resumes, ...transportAndVolume, ...speakerCommands, ...announcements];

/** Every operation, typed: `OPERATIONS[i].name` is the union of the operation names. */
export const OPERATIONS: readonly (typeof TABLE)[number][] = Object.freeze(TABLE);

/** Lookup by wire name; a front end gets any string from its clients. */
export const OPERATIONS_BY_NAME: ReadonlyMap<string, Operation> = new Map(OPERATIONS.map((o) => [o.name, o as Operation]));

/** The name of an operation in the table. */
export type OperationName = (typeof OPERATIONS)[number]['name'];

/** Each operation's entry by name (a play_* entry stands for its three targets). */
type OperationsByName = { [O in (typeof OPERATIONS)[number] as O['name']]: O };

/** The typed entry of one operation. */
export type OperationOf<N extends OperationName> = OperationsByName[N];

/** What an operation answers on success, as on the wire. */
export type ResponseOf<N extends OperationName> = z.output<OperationOf<N>['response']>;

type KeysOfUnion<T> = T extends unknown ? keyof T : never;

/**
 * An operation's parameters (other than SessionToken) as a client sends them: wire text. The
 * nine play_* entries are built by one loop and share a parameter type, so their names here
 * are the union over that family (the hub still validates each).
 */
export type ParamsOf<N extends OperationName> = { [K in KeysOfUnion<z.input<OperationOf<N>['params']>>]?: string | number | readonly string[] };

export function isOperationName(name: string): name is OperationName {
  return OPERATIONS_BY_NAME.has(name);
}

/** Names of an operation's parameters as they appear on the wire, SessionToken first. */
export function parameterNames(op: Operation): string[] {
  return [...(op.needsSession ? ['SessionToken'] : []), ...Object.keys(op.params.shape)];
}
