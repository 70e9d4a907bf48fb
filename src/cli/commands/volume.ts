import type { Command } from 'commander';
import { HubError } from '../../core/errors';
import { parseInteger } from '../../util/values';
import type { RemoteFlags } from '../remote/connection';
import { printJson, printTable } from '../remote/output';
import { resolveOne } from '../remote/resolve';
import { remoteCommand, speakersOf } from './common';

function volumeOf(text: string): number {
  const r = parseInteger(text, 'the volume', 0, 50);
  if (!r.ok) throw new HubError('InvalidParameter', `${r.message}.`);
  return r.value;
}

/** volume: show the volumes, set all, or set one speaker (by name or ID). */
export function registerVolumeCommand(program: Command): void {
  remoteCommand<RemoteFlags>(
    program,
    'volume [args...]',
    'Show volumes (no arguments), set every speaker (volume <n>) or one (volume <speaker> <n>); 0–50.',
    (c) => c,
    async ({ client, flags }, ...args) => {
      if (args.length > 2) throw new HubError('InvalidParameter', 'usage: speakerhub volume [speaker] <0-50>');
      if (args.length === 0) {
        const { DeviceList } = await client.call('device_list');
        if (flags.json) return printJson(DeviceList.map((d) => ({ DeviceID: d.DeviceID, DeviceName: d.DeviceName, Volume: d.Volume })));
        return printTable(
          ['NAME', 'DEVICE ID', 'VOLUME'],
          DeviceList.map((d) => [d.DeviceName, d.DeviceID, String(d.Volume)]),
        );
      }
      const volume = volumeOf(args[args.length - 1]);
      if (args.length === 1) {
        const body = await client.call('set_volume', { Volume: volume });
        if (flags.json) return printJson(body);
        return void process.stdout.write(`Volume ${volume} on every available speaker\n`);
      }
      const { DeviceList } = await client.call('device_list');
      const speaker = resolveOne(speakersOf(DeviceList), args[0], 'speaker');
      const body = await client.call('set_volume_device', { DeviceID: speaker.id, Volume: volume });
      if (flags.json) return printJson(body);
      process.stdout.write(`Volume ${volume} on ${speaker.name}\n`);
    },
  );
}
