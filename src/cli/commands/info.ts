import type { Command } from 'commander';
import type { RemoteFlags } from '../remote/connection';
import { duration, printJson, printTable } from '../remote/output';
import { HubError } from '../../core/errors';
import type { SpeakerHubClient } from '../../client/client';
import type { ResponseOf } from '../../operations/table';
import { remoteCommand } from './common';

/** speakers, media, status: what the hub has and does. */
export function registerInfoCommands(program: Command): void {
  remoteCommand<RemoteFlags>(
    program,
    'speakers',
    'List the speakers (name, DeviceID, state, volume).',
    (c) => c,
    async ({ client, flags }) => {
      const { DeviceList } = await client.call('device_list');
      if (flags.json) return printJson(DeviceList);
      printTable(
        ['NAME', 'DEVICE ID', 'ACTIVE', 'PLAYING', 'VOLUME', 'MODEL', 'ADDRESS'],
        DeviceList.map((d) => [
          d.DeviceName,
          d.DeviceID,
          d.Active ? 'yes' : 'no',
          d.IsPlaying ? 'yes' : 'no',
          String(d.Volume),
          d.ModelName,
          `${d.IPAddress}${d.Port ? `:${d.Port}` : ''}`,
        ]),
      );
    },
  );

  remoteCommand<RemoteFlags>(
    program,
    'media',
    'List the media library (title, artist, album, duration, PersistentID).',
    (c) => c,
    async ({ client, flags }) => {
      const { MediaList } = await client.call('media_list');
      if (flags.json) return printJson(MediaList);
      printTable(
        ['TITLE', 'ARTIST', 'ALBUM', 'LENGTH', 'PERSISTENT ID'],
        MediaList.map((m) => [m.Title, m.Artist, m.AlbumTitle, duration(m.Duration), m.PersistentID]),
      );
    },
  );

  remoteCommand<RemoteFlags>(
    program,
    'status',
    'Show what plays, where, and the volume.',
    (c) => c,
    async ({ client, flags }) => {
      const [status, { DeviceList }] = await Promise.all([sessionStatus(client), client.call('device_list')]);
      const listed = (ids: string) => ids.split(',').filter(Boolean);
      const byId = new Map(DeviceList.map((d) => [d.DeviceID, d]));
      const named = (ids: string) => listed(ids).map((id) => ({ DeviceID: id, DeviceName: byId.get(id)?.DeviceName ?? id }));
      // The speakers of the playback itself; the device list's IsPlaying also counts a speaker busy with an announcement.
      const playing = status.PlayingDeviceIDList ? named(status.PlayingDeviceIDList) : DeviceList.filter((d) => d.IsPlaying);
      const selected = status.SelectedDeviceIDList === undefined ? undefined : named(status.SelectedDeviceIDList);
      const available = DeviceList.filter((d) => d.Active);
      const volume = available.length ? (await client.call('get_volume')).Volume : undefined;
      if (flags.json) {
        return printJson({
          PlaybackState: status.PlaybackState,
          TimeElapsed: status.TimeElapsed,
          ...(status.Title !== undefined ? { Title: status.Title } : {}),
          ...(status.MediaKind !== undefined ? { MediaKind: status.MediaKind } : {}),
          ...(status.MediaUrl !== undefined ? { MediaUrl: status.MediaUrl } : {}),
          ...(status.PersistentID !== undefined ? { PersistentID: status.PersistentID } : {}),
          Volume: volume ?? null,
          Playing: playing.map((d) => ({ DeviceID: d.DeviceID, DeviceName: d.DeviceName })),
          ...(selected ? { Selected: selected } : {}),
        });
      }
      const state = status.PlaybackState.replace('PlayerState', '');
      const what = status.Title !== undefined ? ` ${nowPlaying(status.MediaKind, status.Title)}` : '';
      const at = Number(status.TimeElapsed) >= 0 ? ` at ${duration(Number(status.TimeElapsed))}` : '';
      const where = playing.length ? ` on ${playing.map((d) => d.DeviceName).join(', ')}` : '';
      process.stdout.write(`${state}${what}${at}${where}\n`);
      if (selected) process.stdout.write(`Session: ${selected.length ? selected.map((d) => d.DeviceName).join(', ') : 'no speaker selected'}\n`);
      process.stdout.write(
        `Speakers: ${available.length} of ${DeviceList.length} available${volume !== undefined ? `, average volume ${volume}` : ''}\n`,
      );
    },
  );
}

/** What plays, for a person: a title in quotes, a URL as is, a spoken text cut short. */
function nowPlaying(kind: string | undefined, title: string): string {
  if (kind === 'web') return title;
  if (kind === 'tts') return `speech "${title.length > 60 ? `${title.slice(0, 57)}...` : title}"`;
  return `"${title}"`;
}

/**
 * session_status, or on a hub from before it (another machine's older SpeakerHub) the spec's
 * playback_status: what plays without its title, and no session speakers to show.
 */
async function sessionStatus(
  client: SpeakerHubClient,
): Promise<Omit<ResponseOf<'session_status'>, 'SelectedDeviceIDList'> & { SelectedDeviceIDList?: string }> {
  try {
    return await client.call('session_status');
  } catch (e) {
    if (!(e instanceof HubError) || e.code !== 'UnknownOperation') throw e;
    return { ...(await client.call('playback_status')), PlayingDeviceIDList: '' };
  }
}
