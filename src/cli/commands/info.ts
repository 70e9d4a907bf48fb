import type { Command } from 'commander';
import type { RemoteFlags } from '../remote/connection';
import { duration, printJson, printTable } from '../remote/output';
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
      const [status, { DeviceList }] = await Promise.all([client.call('playback_status'), client.call('device_list')]);
      const playing = DeviceList.filter((d) => d.IsPlaying);
      const available = DeviceList.filter((d) => d.Active);
      const volume = available.length ? (await client.call('get_volume')).Volume : undefined;
      if (flags.json) {
        return printJson({ ...status, Volume: volume ?? null, Playing: playing.map((d) => ({ DeviceID: d.DeviceID, DeviceName: d.DeviceName })) });
      }
      const state = status.PlaybackState.replace('PlayerState', '');
      const at = Number(status.TimeElapsed) >= 0 ? ` at ${duration(Number(status.TimeElapsed))}` : '';
      const where = playing.length ? ` on ${playing.map((d) => d.DeviceName).join(', ')}` : '';
      process.stdout.write(`${state}${at}${where}\n`);
      process.stdout.write(
        `Speakers: ${available.length} of ${DeviceList.length} available${volume !== undefined ? `, average volume ${volume}` : ''}\n`,
      );
    },
  );
}
