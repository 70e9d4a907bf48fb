import { z } from 'zod';
import { HubError } from '../core/errors';
import type { HubCore } from '../core/hub-core';
import { DeviceIDParam, MediaUrlParam, OnOffParam, PersistentIDParam, ResultResponse, Bool } from './schemas';
import { bool, define, EXAMPLE, ok, type Operation, type OperationContext } from './define';
import { sessionAndDevices } from './ops-session';
import { plays, resumes, transport } from './ops-playback';

// ---- speaker commands (beyond the spec) ----------------------------------------------------
// What "turn this speaker off", "mute" and "party" mean, defined once for every front end
// (MQTT's per-speaker topics, HomeKit's switches, Node-RED, the DLNA renderers): each is
// expressed in the spec's own operations, so its effects are the ones those document.

/** The spec operations the speaker commands are expressed in. */
const BASE: ReadonlyMap<string, Operation> = new Map([...sessionAndDevices, ...plays, ...resumes, ...transport].map((o) => [o.name, o as Operation]));

/** Runs another entry of the table with wire parameters (validated as that operation validates them). */
async function call(hub: HubCore, name: string, params: Record<string, unknown>, ctx: OperationContext): Promise<unknown> {
  const op = BASE.get(name)!;
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

export const speakerCommands = [
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
