import type { Command } from 'commander';
import type { SpeakerHubClient } from '../../rest-client/client';
import type { ResponseOf } from '../../operations/table';
import { EXIT_FAILED, EXIT_USAGE } from '../program';
import { addRemoteOptions, connect, explainRemoteError, UsageError, type RemoteFlags } from '../remote/connection';
import { resolveMany, type Named } from '../remote/resolve';

export type Device = ResponseOf<'device_list'>['DeviceList'][number];
export type MediaItem = ResponseOf<'media_list'>['MediaList'][number];

export interface RemoteContext<F extends RemoteFlags> {
  client: SpeakerHubClient;
  flags: F;
  url: string;
}

/**
 * Defines a command that talks to a running hub: common options, one client (its session
 * closed afterwards), failures as one line on stderr with exit code 1.
 */
export function remoteCommand<F extends RemoteFlags>(
  program: Command,
  spec: string,
  description: string,
  setup: (cmd: Command) => Command,
  run: (ctx: RemoteContext<F>, ...args: string[]) => Promise<void>,
): void {
  const cmd = addRemoteOptions(setup(program.command(spec).description(description)));
  cmd.action(async (...args: unknown[]) => {
    // commander passes the positional arguments, then the options, then the command.
    const flags = cmd.opts<F>();
    const positional = args
      .slice(0, -2)
      .flat()
      .filter((a): a is string => typeof a === 'string');
    let connection: ReturnType<typeof connect>;
    try {
      connection = connect(flags);
    } catch (e) {
      if (!(e instanceof UsageError)) throw e;
      process.stderr.write(`speakerhub: ${e.message}\n`);
      process.exitCode = EXIT_USAGE;
      return;
    }
    const { client, url } = connection;
    try {
      await run({ client, flags, url }, ...positional);
    } catch (e) {
      process.stderr.write(`speakerhub: ${explainRemoteError(e, url)}\n`);
      process.exitCode = EXIT_FAILED;
    } finally {
      await client.close().catch(() => undefined);
    }
  });
}

export const speakersOf = (list: Device[]): (Named & { device: Device })[] => list.map((d) => ({ id: d.DeviceID, name: d.DeviceName, device: d }));

/** The speakers named by --speakers (names or IDs, comma-separated), or undefined for all. */
export async function targetSpeakers(client: SpeakerHubClient, list: string | undefined): Promise<Device[] | undefined> {
  if (!list) return undefined;
  const { DeviceList } = await client.call('device_list');
  return resolveMany(speakersOf(DeviceList), list, 'speaker').map((s) => s.device);
}

export function speakerNames(devices: Device[]): string {
  return devices.map((d) => d.DeviceName).join(', ');
}
