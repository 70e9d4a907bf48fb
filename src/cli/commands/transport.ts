import type { Command } from 'commander';
import { HubError } from '../../core/errors';
import { printJson } from '../remote/output';
import { remoteCommand, speakerNames, targetSpeakers, type Device } from './common';
import type { RemoteFlags } from '../remote/connection';
import type { SpeakerHubClient } from '../../rest-client/client';

interface ZoneFlags extends RemoteFlags {
  speakers?: string;
}

const speakersOption = (c: Command) => c.option('-s, --speakers <names>', 'comma-separated speaker names or DeviceIDs: only their zones');

/**
 * pause, resume, mute, unmute: per room. Without --speakers pause and resume act on every zone
 * (what `status` lists); with it, on the zones those speakers play in (other rooms go on).
 */
export function registerTransportCommands(program: Command): void {
  remoteCommand<ZoneFlags>(
    program,
    'pause',
    'Pause what plays (hub media; web media and speech stop, as the spec says): every zone, or with --speakers only their zones.',
    speakersOption,
    async ({ client, flags }) => {
      const zones = await zonesOf(client, await targetSpeakers(client, flags.speakers));
      const playing = zones.filter((z) => z.PlaybackState === 'PlayerStatePlaying');
      if (!playing.length) throw new HubError('NotPlaying', 'nothing is playing there.');
      for (const z of playing) await client.call('pause_play', { PlaybackID: z.PlaybackID });
      if (flags.json) return printJson({ Result: 'true', Paused: playing.map((z) => z.PlaybackID) });
      process.stdout.write(`Paused ${playing.length === 1 ? 'one zone' : `${playing.length} zones`}\n`);
    },
  );

  remoteCommand<ZoneFlags>(
    program,
    'resume',
    'Resume paused hub media where it stopped: every paused zone, or with --speakers only their zones.',
    speakersOption,
    async ({ client, flags }) => {
      const zones = await zonesOf(client, await targetSpeakers(client, flags.speakers));
      const paused = zones.filter((z) => z.PlaybackState === 'PlayerStatePaused' && z.PersistentID !== undefined);
      if (!paused.length) throw new HubError('NotResumable', 'nothing is paused there.');
      for (const z of paused) {
        await client.call('resume_hub_media_selected_speakers', { PersistentID: z.PersistentID!, DeviceIDList: z.DeviceIDList });
      }
      if (flags.json) return printJson({ Result: 'true', Resumed: paused.map((z) => z.PlaybackID) });
      process.stdout.write(`Playing again ${paused.length === 1 ? 'one zone' : `${paused.length} zones`}\n`);
    },
  );

  for (const mute of [true, false]) {
    remoteCommand<ZoneFlags>(
      program,
      mute ? 'mute' : 'unmute',
      mute
        ? 'Mute speakers (each keeps its volume where it has a mute of its own): every available one, or --speakers.'
        : 'Unmute speakers: every available one, or --speakers.',
      speakersOption,
      async ({ client, flags }) => {
        const target = (await targetSpeakers(client, flags.speakers)) ?? (await client.call('device_list')).DeviceList.filter((d) => d.Active);
        for (const d of target) await client.call('set_mute_device', { DeviceID: d.DeviceID, Mute: String(mute) });
        if (flags.json) return printJson({ Result: 'true' });
        process.stdout.write(`${mute ? 'Muted' : 'Unmuted'} ${speakerNames(target)}\n`);
      },
    );
  }
}

/** The zones to act on: those of these speakers, or every zone. */
async function zonesOf(client: SpeakerHubClient, speakers: Device[] | undefined) {
  const all = (await client.call('playback_list')).PlaybackList;
  if (!speakers) return all;
  const ids = new Set(speakers.map((d) => d.DeviceID));
  return all.filter((z) => z.DeviceIDList.some((id) => ids.has(id)));
}
