import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { HubConfigInput } from '../../../src/hub-config';
import { startHub, type TestHub } from '../../helpers/hub';
import { labSuite } from '../../helpers/labs';
import { canRunReceivers, until, type ReceiverLab, type Receiver } from './harness';

/**
 * What the AirPlay lab suites that run a hub set up alike: their describe (skipped, saying
 * why, where shairport-sync receivers cannot run), the tone files they play, and a hub with
 * `airplay.receivers` once its speakers are available. (Kept apart from harness.ts, which
 * benches compile without the hub's test helpers.)
 */

export const describeAirPlayLab = labSuite(
  'the AirPlay lab',
  canRunReceivers() ? undefined : 'shairport-sync, avahi-daemon, dbus-daemon, ffmpeg or root (for namespaces) is missing',
);

/** The lab's music folder (lab.dir/music), made on first use. */
export function musicDir(lab: ReceiverLab): string {
  const dir = join(lab.dir, 'music');
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** A tone the receivers hear well: ffmpeg's sine at `hz`, 4× louder, stereo 44.1 kHz, titled for media_list. */
export function toneFile(dir: string, file: string, hz: number, seconds: number, title: string): string {
  const path = join(dir, file);
  execFileSync('ffmpeg', [
    '-loglevel',
    'error',
    '-f',
    'lavfi',
    '-i',
    `sine=frequency=${hz}:duration=${seconds}`,
    '-af',
    'volume=4',
    '-ac',
    '2',
    '-ar',
    '44100',
    '-metadata',
    `title=${title}`,
    path,
  ]);
  return path;
}

/**
 * A hub playing the music folder to these receivers (plus `extra` config), once `active`
 * speakers are available (the receivers, and any others `extra` adds); the receivers'
 * DeviceIDs in order, and the PersistentID of each title in the library.
 */
export async function hubWithReceivers(
  rx: Receiver[],
  music: string,
  options: { active?: number; extra?: HubConfigInput } = {},
): Promise<{ t: TestHub; ids: string[]; media: Record<string, string> }> {
  const active = options.active ?? rx.length;
  const t = await startHub({
    media: { samples: false, folders: [music] },
    airplay: { receivers: rx.map((r) => ({ host: r.host, port: r.port, name: r.name })) },
    ...options.extra,
  } as never);
  await until(`${active} available speakers`, async () => {
    const list = (await t.op('device_list')).DeviceList ?? [];
    return list.filter((d: any) => d.Active === true).length === active;
  });
  const list = (await t.op('device_list')).DeviceList;
  const ids = rx.map((r) => list.find((d: any) => d.DeviceName === r.name).DeviceID as string);
  const media: Record<string, string> = {};
  for (const m of (await t.op('media_list')).MediaList) media[m.Title] = m.PersistentID;
  return { t, ids, media };
}
