import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { snapcastDeviceId } from '../../../src/drivers/snapcast';
import { freePort, SAMPLE_FORMAT, SnapcastEnv } from './harness';
import { startSnapcastHub, toneWav } from './hub';
import { eventually } from '../../helpers/wait';
import { leftChannel, toneAmplitude } from '../../helpers/audio';

/**
 * Announce-to-first-speech on a real snapclient, Mode duck against Mode interrupt (issue 21),
 * for `npm run bench` (bench/duck.js). The client plays to stdout, a pipe read here; each
 * read is stamped with the monotonic clock, and snapclient's file player writes a 50 ms
 * block 10 ms before it is due at the DAC (see offset.ts), so the first block holding the
 * speech tone, stamped, is when the speech is heard. The music is a 440 Hz tone, the speech
 * 1000 Hz (a Goertzel filter tells them apart in the mix).
 */

const MUSIC_HZ = 440;
const SPEECH_HZ = 1000;
const BLOCK_BYTES = (SAMPLE_FORMAT.rate / 20) * SAMPLE_FORMAT.bytesPerFrame;

export interface DuckLatencyResult {
  /** ms from the announce request to the first speech heard, per round. */
  duck: number[];
  interrupt: number[];
}

function amplitude(block: Buffer, hz: number): number {
  return toneAmplitude(leftChannel(block, SAMPLE_FORMAT.bytesPerFrame), SAMPLE_FORMAT.rate, hz);
}

export async function measureDuckLatency(options: { rounds?: number } = {}): Promise<DuckLatencyResult> {
  const rounds = options.rounds ?? 4;
  const env = await SnapcastEnv.create('speakerhub-bench-duck-');
  const conf = join(env.dir, 'snapserver.conf');
  const port = await freePort();
  await writeFile(conf, (await readFile(conf, 'utf8')).replace('[http]', `source = tcp://127.0.0.1:${port}?name=Announce&mode=server\n[http]`));
  let hub: Awaited<ReturnType<typeof startSnapcastHub>> | undefined;
  try {
    await env.startServer();
    const client = await env.startClient(1, { output: 'stdout' });
    await env.clientsConnected([client.hostId]);
    // Blocks as they come: the read time of each block, and whether it holds speech.
    let pending = Buffer.alloc(0);
    const blocks: { at: number; speech: boolean }[] = [];
    client.proc!.stdout!.on('data', (d: Buffer) => {
      const at = performance.now();
      pending = Buffer.concat([pending, d]);
      while (pending.length >= BLOCK_BYTES) {
        const block = pending.subarray(0, BLOCK_BYTES);
        pending = pending.subarray(BLOCK_BYTES);
        blocks.push({ at, speech: amplitude(block, SPEECH_HZ) > 500 });
        if (blocks.length > 4000) blocks.splice(0, 2000);
      }
    });
    hub = await startSnapcastHub(
      env.address,
      { 'music.wav': toneWav(600, MUSIC_HZ, 'Music'), 'speech.wav': toneWav(2, SPEECH_HZ, 'Speech') },
      { announceStream: 'Announce' },
    );
    const t = hub;
    const id = snapcastDeviceId(env.address, client.hostId);
    await eventually(async () => (await t.op('device_list')).DeviceList.some((d: any) => d.Active), 10_000, 'the client');
    const pids: Record<string, string> = {};
    for (const m of (await t.op('media_list')).MediaList) pids[m.Title] = m.PersistentID;
    await t.op('play_hub_media_selected_speakers', { PersistentID: pids.Music, DeviceIDList: id });
    await new Promise((r) => setTimeout(r, 3000));
    const result: DuckLatencyResult = { duck: [], interrupt: [] };
    for (let i = 0; i < rounds * 2; i++) {
      const mode = i % 2 === 0 ? 'duck' : 'interrupt';
      const t0 = performance.now();
      const a = await t.op('announce', { PersistentID: pids.Speech, DeviceIDList: id, Mode: mode });
      await eventually(() => blocks.some((b) => b.at >= t0 && b.speech), 20_000, 'the speech');
      result[mode].push(blocks.find((b) => b.at >= t0 && b.speech)!.at + 10 - t0);
      await eventually(
        async () => ['done', 'failed'].includes((await t.op('announcement_status', { AnnouncementID: a.AnnouncementID })).State),
        30_000,
        'done',
      );
      const status = await t.op('announcement_status', { AnnouncementID: a.AnnouncementID });
      if (status.Mode !== mode) throw new Error(`the announcement played in Mode ${status.Mode}, not ${mode}: ${status.ModeReason}`);
      // The music back and settled before the next round.
      await new Promise((r) => setTimeout(r, 2500));
    }
    await t.op('stop_play');
    return result;
  } finally {
    await hub?.close();
    await env.close();
  }
}
