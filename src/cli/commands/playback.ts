import type { Command } from 'commander';
import { HubError } from '../../core/errors';
import type { RemoteFlags } from '../remote/connection';
import { printJson } from '../remote/output';
import { resolveOne } from '../remote/resolve';
import { intFlag } from '../hub-command';
import { remoteCommand, speakerNames, targetSpeakers, type Device } from './common';

interface PlayFlags extends RemoteFlags {
  speakers?: string;
  volume?: number;
  priority?: number;
}

const URL_LIKE = /^[a-z][a-z0-9+.-]*:\/\//i;

function report(flags: RemoteFlags, what: string, target: Device[] | undefined, body: Record<string, unknown>): void {
  if (flags.json) return printJson(body);
  process.stdout.write(`${what} on ${target ? speakerNames(target) : 'every available speaker'}\n`);
}

const speakerOptions = (c: Command) =>
  c
    .option('-s, --speakers <list>', 'speaker names or DeviceIDs, comma-separated (default: every available speaker)')
    .option(
      '--priority <n>',
      'playback priority (default 100): a lower one than what plays is refused',
      intFlag('--priority', -2147483648, 2147483647),
    );

/** say, play, stop. */
export function registerPlaybackCommands(program: Command): void {
  // `say` uses play_tts_*: every hub (and the original API) has them, with the documented parameters.
  remoteCommand<PlayFlags>(
    program,
    'say <text>',
    'Speak a text on the speakers (text-to-speech).',
    (c) => speakerOptions(c).option('--volume <n>', 'set the target speakers to this volume (0–50) first', intFlag('--volume', 0, 50)),
    async ({ client, flags }, text) => {
      const target = await targetSpeakers(client, flags.speakers);
      if (flags.volume !== undefined) {
        if (target) for (const d of target) await client.call('set_volume_device', { DeviceID: d.DeviceID, Volume: flags.volume });
        else await client.call('set_volume', { Volume: flags.volume });
      }
      const priority = flags.priority === undefined ? {} : { Priority: flags.priority };
      const body = target
        ? await client.call('play_tts_selected_speakers', { Text: text, DeviceIDList: target.map((d) => d.DeviceID), ...priority })
        : await client.call('play_tts_party_mode', { Text: text, ...priority });
      report(flags, `Saying "${text.length > 60 ? `${text.slice(0, 57)}…` : text}"`, target, body);
    },
  );

  remoteCommand<PlayFlags>(
    program,
    'play <what>',
    'Play a media item (by title or PersistentID) or a web URL (http, https, rtsp, mms).',
    speakerOptions,
    async ({ client, flags }, what) => {
      const target = await targetSpeakers(client, flags.speakers);
      const priority = flags.priority === undefined ? {} : { Priority: flags.priority };
      const ids = target?.map((d) => d.DeviceID);
      if (URL_LIKE.test(what)) {
        const body = ids
          ? await client.call('play_web_media_selected_speakers', { MediaUrl: what, DeviceIDList: ids, ...priority })
          : await client.call('play_web_media_party_mode', { MediaUrl: what, ...priority });
        return report(flags, `Playing ${what}`, target, body);
      }
      const { MediaList } = await client.call('media_list');
      if (!MediaList.length) throw new HubError('MediaNotFound', 'the media library is empty; add folders with speakerhub hub --media <dir>.');
      const item = resolveOne(
        MediaList.map((m) => ({ id: m.PersistentID, name: m.Title, item: m })),
        what,
        'media item',
      ).item;
      const body = ids
        ? await client.call('play_hub_media_selected_speakers', { PersistentID: item.PersistentID, DeviceIDList: ids, ...priority })
        : await client.call('play_hub_media_party_mode', { PersistentID: item.PersistentID, ...priority });
      report(flags, `Playing "${item.Title}"${item.Artist ? ` by ${item.Artist}` : ''}`, target, body);
    },
  );

  remoteCommand<RemoteFlags>(
    program,
    'stop',
    'Stop what plays.',
    (c) => c,
    async ({ client, flags }) => {
      const body = await client.call('stop_play');
      if (flags.json) return printJson(body);
      process.stdout.write('Stopped\n');
    },
  );
}
