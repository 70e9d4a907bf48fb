import { z } from 'zod';
import { HubError } from '../core/errors';
import { DEFAULT_PRIORITY } from '../core/playback-engine';
import {
  AnnouncementIDParam,
  AnnouncementModeParam,
  AnnouncementModeSchema,
  AnnouncementReasonCodeSchema,
  AnnouncementStateSchema,
  Bool,
  ChimeParam,
  DeviceIDListParam,
  DuckLevelParam,
  FadeMsParam,
  MediaUrlParam,
  PersistentIDParam,
  PriorityParam,
  TextParam,
  VoiceParam,
  VolumeParam,
} from './schemas';
import { define } from './define';

// ---- announcements (beyond the spec) ------------------------------------------------------

export const announcements = [
  define({
    name: 'announce',
    group: 'announcement',
    beyondSpec: true,
    summary:
      "Beyond the spec. Speaks Text (or plays MediaUrl or PersistentID) on DeviceIDList (default: every available speaker) as an overlay, then puts every speaker back as it was (music rejoins in sync; volume, mute, other apps' media restored). Optional Volume (0–50, the level while it speaks), Chime (true/false or a PersistentID played first; default false), Priority (default 100: lower than the music on a target is refused; a higher one cuts in on announcements, others queue), Voice (TTS voice), Mode (interrupt, the default: the music stops on the targets and comes back after; duck: it goes on under the voice, DuckLevel dB lower (-40..0, default -15), fading over FadeMs (0–10000, default 500); only where the hub mixes the speaker's audio, elsewhere it interrupts and announcement_status says why). The chime, a 300 ms gap and the speech play as one clip, at the configured loudness (announcements.loudness, default -16 LUFS); a Text not spoken before plays its chime at once while it is synthesized, and the speech (gap first) follows as a play of its own. Answers at once with the AnnouncementID.",
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
