import { z } from 'zod';
import { HubError } from '../core/errors';
import { DeviceIDParam, DeviceSchema, MediaItemSchema, ResultResponse, Bool } from './schemas';
import { define, ok, EXAMPLE } from './define';

// ---- session and devices ------------------------------------------------------------------

export const sessionAndDevices = [
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
    summary: 'One speaker, as a bare device object; beyond the spec, PlaybackID names the zone (playback) it is in, when it is in one.',
    params: z.object({ DeviceID: DeviceIDParam }),
    response: DeviceSchema.extend({ PlaybackID: z.string().optional() }),
    example: { DeviceID: EXAMPLE.deviceId },
    handler: (hub, p) => {
      const record = hub.speakers.record(hub.speakers.get(p.DeviceID));
      const zone = hub.playback.playbackOf(p.DeviceID);
      return zone !== undefined ? { ...record, PlaybackID: zone } : record;
    },
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
