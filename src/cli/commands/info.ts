import type { Command } from 'commander';
import type { RemoteFlags } from '../remote/connection';
import { duration, printJson, printTable } from '../remote/output';
import { HubError } from '../../core/errors';
import type { SpeakerHubClient } from '../../rest-client/client';
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
      const busy = busySpeakers(DeviceList, await playbacks(client));
      printTable(
        ['NAME', 'DEVICE ID', 'ACTIVE', 'PLAYING', 'VOLUME', 'MODEL', 'ADDRESS'],
        DeviceList.map((d) => [
          d.DeviceName,
          d.DeviceID,
          d.Active ? 'yes' : 'no',
          busy.includes(d) ? 'busy' : d.IsPlaying ? 'yes' : 'no',
          String(d.Volume),
          d.ModelName,
          `${d.IPAddress}${d.Port ? `:${d.Port}` : ''}`,
        ]),
      );
      for (const d of busy) process.stdout.write(`${d.DeviceName} busy: playing ${ownMedia(d)}, not the hub's (a play from the hub takes it over)\n`);
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
    'Show what plays in every zone (each playback: what, how far, on which speakers) and the volume.',
    (c) => c,
    async ({ client, flags }) => {
      const [zones, { DeviceList }] = await Promise.all([playbacks(client), client.call('device_list')]);
      const byId = new Map(DeviceList.map((d) => [d.DeviceID, d]));
      const named = (ids: string[]) => ids.map((id) => ({ DeviceID: id, DeviceName: byId.get(id)?.DeviceName ?? id }));
      const available = DeviceList.filter((d) => d.Active);
      const busy = busySpeakers(DeviceList, zones);
      const volume = available.length ? (await client.call('get_volume')).Volume : undefined;
      // The zone started last first: with one zone the first line reads as it always did.
      const latest = [...zones].reverse();
      if (flags.json) {
        const first = latest[0];
        return printJson({
          PlaybackState: first?.PlaybackState ?? 'PlayerStateStopped',
          TimeElapsed: String(first?.TimeElapsed ?? -1),
          ...(first?.Title !== undefined ? { Title: first.Title } : {}),
          ...(first?.MediaKind !== undefined ? { MediaKind: first.MediaKind } : {}),
          ...(first?.MediaUrl !== undefined ? { MediaUrl: first.MediaUrl } : {}),
          ...(first?.PersistentID !== undefined ? { PersistentID: first.PersistentID } : {}),
          Volume: volume ?? null,
          Playing: first ? named(first.DeviceIDList) : [],
          Zones: latest.map((z) => ({ ...z, Speakers: named(z.DeviceIDList) })),
          Busy: busy.map((d) => ({ DeviceID: d.DeviceID, DeviceName: d.DeviceName })),
        });
      }
      if (!latest.length) process.stdout.write('Stopped\n');
      for (const z of latest) {
        const state = z.PlaybackState.replace('PlayerState', '');
        const what = z.Title !== undefined ? ` ${nowPlaying(z.MediaKind, z.Title)}` : '';
        const at = z.TimeElapsed >= 0 ? ` at ${duration(z.TimeElapsed)}` : '';
        const where = z.DeviceIDList.length
          ? ` on ${named(z.DeviceIDList)
              .map((d) => d.DeviceName)
              .join(', ')}`
          : '';
        process.stdout.write(`${state}${what}${at}${where}\n`);
      }
      // Speakers that play what the hub did not start (an MPD's own queue): said, not shown as stopped.
      for (const d of busy) process.stdout.write(`Busy: ${d.DeviceName} is playing ${ownMedia(d)} (not the hub's)\n`);
      process.stdout.write(
        `Speakers: ${available.length} of ${DeviceList.length} available${volume !== undefined ? `, average volume ${volume}` : ''}\n`,
      );
    },
  );
}

type Device = ResponseOf<'device_list'>['DeviceList'][number];

/**
 * Speakers busy with media the hub did not start (an MPD playing its own queue, a renderer
 * another app plays on): device_list says they play (IsPlaying: the speaker's own state),
 * no playing zone holds them. One reading in the CLI and on the page (src/hub-client's busy()).
 */
function busySpeakers(devices: Device[], zones: Zone[]): Device[] {
  const inZone = new Set(zones.filter((z) => z.PlaybackState === 'PlayerStatePlaying').flatMap((z) => z.DeviceIDList));
  return devices.filter((d) => d.Active && d.IsPlaying && !inZone.has(d.DeviceID));
}

/** What a busy speaker plays, as its family calls it. */
function ownMedia(d: Device): string {
  return /^MPD\b/.test(d.ModelName) ? 'its own queue' : 'media the hub did not start';
}

/** What plays, for a person: a title in quotes, a URL as is, a spoken text cut short. */
function nowPlaying(kind: string | undefined, title: string): string {
  if (kind === 'web') return title;
  if (kind === 'tts') return `speech "${title.length > 60 ? `${title.slice(0, 57)}...` : title}"`;
  return `"${title}"`;
}

type Zone = ResponseOf<'playback_list'>['PlaybackList'][number];

/**
 * Every playback (zone), oldest first: playback_list, or on a hub from before zones (another
 * machine's older SpeakerHub) its one playback as session_status (or the spec's
 * playback_status, without a title) says it.
 */
async function playbacks(client: SpeakerHubClient): Promise<Zone[]> {
  try {
    return (await client.call('playback_list')).PlaybackList;
  } catch (e) {
    if (!(e instanceof HubError) || e.code !== 'UnknownOperation') throw e;
  }
  const s = await client.call('session_status').catch(async (e: unknown) => {
    if (!(e instanceof HubError) || e.code !== 'UnknownOperation') throw e;
    return { ...(await client.call('playback_status')), PlayingDeviceIDList: '' } as Partial<ResponseOf<'session_status'>> &
      ResponseOf<'playback_status'>;
  });
  if (s.PlaybackState === 'PlayerStateStopped') return [];
  return [
    {
      PlaybackID: '',
      PlaybackState: s.PlaybackState,
      TimeElapsed: Number(s.TimeElapsed),
      MediaKind: s.MediaKind ?? 'hub',
      ...(s.Title !== undefined ? { Title: s.Title } : {}),
      ...(s.MediaUrl !== undefined ? { MediaUrl: s.MediaUrl } : {}),
      ...(s.PersistentID !== undefined ? { PersistentID: s.PersistentID } : {}),
      Priority: 100,
      DeviceIDList: (s.PlayingDeviceIDList ?? '').split(',').filter(Boolean),
      Since: '',
    },
  ];
}
