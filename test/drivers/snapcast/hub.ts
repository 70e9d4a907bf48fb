import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { systemClock } from '../../../src/core/clock';
import { SnapcastDriver, SnapcastConfigSchema } from '../../../src/drivers/snapcast';
import { createHub, type SpeakerHub } from '../../../src/hub';
import { createLogger } from '../../../src/logger';
import { encodeWav } from '../../../src/audio/wav';
import { sine } from '../../helpers/audio';
import { eventually } from '../../helpers/wait';

export const TOKEN = 'snapcast-test-token-0123456789';

export interface SnapcastHub {
  hub: SpeakerHub;
  driver: SnapcastDriver;
  base: string;
  logs: string[];
  mediaDir: string;
  /** Runs a REST operation (SessionToken added) and returns the JSON body. */
  op(name: string, params?: Record<string, string>): Promise<any>;
  close(): Promise<void>;
}

/** A mono 16-bit sine, `seconds` long, loud enough to find in a client's output. */
export function toneWav(seconds: number, freq: number, title: string, rate = 22050): Buffer {
  const samples = sine(seconds, freq, rate);
  return encodeWav(samples, rate, { title, artist: 'Snapcast Test', album: 'Snapcast Test' });
}

/**
 * A real hub (REST on loopback, no virtual speakers) with a Snapcast driver for `address`,
 * and a media folder holding `media` (file name → bytes).
 */
export async function startSnapcastHub(
  address: string,
  media: Record<string, Buffer>,
  driverConfig: Record<string, unknown> = {},
): Promise<SnapcastHub> {
  const dataDir = await mkdtemp(join(tmpdir(), 'speakerhub-snapcast-hub-'));
  const mediaDir = join(dataDir, 'music');
  await mkdir(mediaDir);
  for (const [name, bytes] of Object.entries(media)) await writeFile(join(mediaDir, name), bytes);
  const logs: string[] = [];
  const logger = createLogger({
    level: 'debug',
    stream: new Writable({
      write(chunk, _enc, cb) {
        logs.push(String(chunk));
        cb();
      },
    }),
  });
  const driver = new SnapcastDriver({
    config: SnapcastConfigSchema.parse({ servers: [address], reconnectMinMs: 100, reconnectMaxMs: 500, ...driverConfig }),
    clock: systemClock,
    logger,
  });
  const hub = createHub(
    {
      dataDir,
      speakers: { virtual: { count: 0 } },
      server: { host: '127.0.0.1', port: 0, token: TOKEN },
      media: { samples: false, folders: [mediaDir] },
      log: { level: 'debug' },
    },
    { drivers: [driver], logger },
  );
  await hub.start();
  const base = hub.url!;
  const get = async (path: string) => (await fetch(base + path, { headers: { Authorization: `Bearer ${TOKEN}` } })).json() as Promise<any>;
  const session = (await get('/api/v1/init_session')).SessionToken as string;
  return {
    hub,
    driver,
    base,
    logs,
    mediaDir,
    op: (name, params = {}) => get(`/api/v1/${name}?${new URLSearchParams({ SessionToken: session, ...params })}`),
    async close() {
      await hub.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * One ducked announcement of `speech` after `chime` (PersistentIDs) on `deviceIds`, DuckLevel
 * `levelDb`, fade 200 ms: resolves once it is over; throws unless it ended done and ducked.
 */
export async function duckedAnnouncement(
  hub: Pick<SnapcastHub, 'op'>,
  speech: string,
  chime: string,
  deviceIds: string[],
  levelDb: number,
): Promise<void> {
  const a = await hub.op('announce', {
    PersistentID: speech,
    Chime: chime,
    DeviceIDList: deviceIds.join(','),
    Mode: 'duck',
    DuckLevel: String(levelDb),
    FadeMs: '200',
  });
  if (a.Result !== 'true') throw new Error(`announce failed: ${JSON.stringify(a)}`);
  const status = () => hub.op('announcement_status', { AnnouncementID: a.AnnouncementID });
  await eventually(async () => ['done', 'failed'].includes((await status()).State), 30_000, 'the announcement over', 100);
  const st = await status();
  if (st.State !== 'done' || st.Mode !== 'duck') throw new Error(`announcement ${JSON.stringify(st)}`);
}
