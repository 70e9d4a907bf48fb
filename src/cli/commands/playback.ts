import type { Command } from 'commander';
import { HubError } from '../../core/errors';
import type { RemoteFlags } from '../remote/connection';
import { printJson } from '../remote/output';
import { resolveOne } from '../remote/resolve';
import { intFlag } from '../hub-command';
import type { SpeakerHubClient } from '../../rest-client/client';
import { remoteCommand, speakerNames, targetSpeakers, type Device } from './common';

interface PlayFlags extends RemoteFlags {
  speakers?: string;
  priority?: number;
}

interface SayFlags extends PlayFlags {
  volume?: number;
  chime?: boolean;
  voice?: string;
  wait?: boolean;
  duck?: boolean;
  duckLevel?: number;
}

/** How long `say` follows an announcement before it gives up waiting (the announcement itself goes on). */
const SAY_WAIT_MS = 10 * 60_000;

/** Follows announcement_status until the announcement is done or failed. */
async function waitForAnnouncement(client: SpeakerHubClient, id: string): Promise<Record<string, string>> {
  const end = Date.now() + SAY_WAIT_MS;
  for (;;) {
    const status = (await client.call('announcement_status', { AnnouncementID: id })) as unknown as Record<string, string>;
    if (status.State === 'done' || status.State === 'failed') return status;
    if (Date.now() > end) throw new HubError('Busy', `announcement ${id} is still ${status.State}; follow it with announcement_status`);
    await new Promise((r) => setTimeout(r, 250));
  }
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
  // `say` is what a person means by "say this on the speakers": an announcement (the music on
  // the others goes on, the targets are put back as they were afterwards, at their own volume).
  remoteCommand<SayFlags>(
    program,
    'say <text>',
    'Announce a text on the speakers (text-to-speech): the music on the others plays on, and every speaker is put back as it was afterwards.',
    (c) =>
      speakerOptions(c)
        .option('--volume <n>', 'the level while it speaks (0–50); each speaker gets its own back afterwards', intFlag('--volume', 0, 50))
        .option('--chime', 'a chime before the words')
        .option('--voice <voice>', 'TTS voice (e.g. en, en-us, de)')
        .option(
          '--duck',
          'keep the music playing, lowered, under the voice (where the hub mixes the speaker; elsewhere it is interrupted and the output says why)',
        )
        .option('--duck-level <dB>', 'with --duck: how much lower the music goes (-40..0, default -15)', intFlag('--duck-level', -40, 0))
        .option('--no-wait', 'answer at once with the AnnouncementID instead of waiting until it is done'),
    async ({ client, flags }, text) => {
      const target = await targetSpeakers(client, flags.speakers);
      const { AnnouncementID } = await client.call('announce', {
        Text: text,
        ...(target ? { DeviceIDList: target.map((d) => d.DeviceID) } : {}),
        ...(flags.volume !== undefined ? { Volume: flags.volume } : {}),
        ...(flags.chime ? { Chime: 'true' } : {}),
        ...(flags.priority !== undefined ? { Priority: flags.priority } : {}),
        ...(flags.voice ? { Voice: flags.voice } : {}),
        ...(flags.duck ? { Mode: 'duck' } : {}),
        ...(flags.duckLevel !== undefined ? { DuckLevel: flags.duckLevel } : {}),
      });
      const quoted = `"${text.length > 60 ? `${text.slice(0, 57)}…` : text}"`;
      if (flags.wait === false) {
        if (flags.json) return printJson({ Result: 'true', AnnouncementID });
        process.stdout.write(
          `Announcing ${quoted} on ${target ? speakerNames(target) : 'every available speaker'} (AnnouncementID ${AnnouncementID})\n`,
        );
        return;
      }
      const status = await waitForAnnouncement(client, AnnouncementID);
      if (flags.json) return printJson(status);
      if (status.State === 'failed') throw new HubError('InternalError', `the announcement failed: ${status.Reason ?? 'no reason given'}`);
      report(flags, `Said ${quoted}`, target, status);
      // Asked to duck and could not: say so (never silently).
      if (!flags.json && status.ModeReason) process.stdout.write(`The music was interrupted, not ducked: ${status.ModeReason}\n`);
    },
  );

  // The spec's TTS play, under its own name: it replaces the music for good (no restore).
  remoteCommand<PlayFlags>(
    program,
    'play-tts <text>',
    "Play a text as the hub's playback (the spec's play_tts_*): it replaces what plays, with no restore afterwards.",
    speakerOptions,
    async ({ client, flags }, text) => {
      const target = await targetSpeakers(client, flags.speakers);
      const priority = flags.priority === undefined ? {} : { Priority: flags.priority };
      const body = target
        ? await client.call('play_tts_selected_speakers', { Text: text, DeviceIDList: target.map((d) => d.DeviceID), ...priority })
        : await client.call('play_tts_party_mode', { Text: text, ...priority });
      report(flags, `Playing "${text.length > 60 ? `${text.slice(0, 57)}…` : text}"`, target, body);
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
    'Stop what plays: every zone, or with --speakers only the zones those speakers play in (other rooms play on).',
    (c) => c.option('-s, --speakers <names>', 'comma-separated speaker names or DeviceIDs: stop only their zones'),
    async ({ client, flags }) => {
      const target = await targetSpeakers(client, (flags as PlayFlags).speakers);
      let body: Record<string, unknown> = { Result: 'true' };
      if (!target) body = await client.call('stop_play');
      else for (const d of target) body = await client.call('stop_play', { DeviceID: d.DeviceID });
      if (flags.json) return printJson(body);
      process.stdout.write(target ? `Stopped on ${speakerNames(target)}\n` : 'Stopped\n');
    },
  );
}
