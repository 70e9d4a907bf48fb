import { connect, type Socket } from 'node:net';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileSize, groupOf, HUB_STREAM, SAMPLE_FORMAT, SnapcastEnv } from './harness';
import { captureFrom, leftChannel, toneAmplitude } from '../../helpers/audio';
import { eventually } from '../../helpers/wait';

/**
 * What a snapclient misses when its group changes streams (issue 30), measured on real
 * snapserver/snapclients (bench/snapcast-switch.js): two hub-fed streams carrying the same
 * 440 Hz PCM written at the same moments (one pacer, both sockets), two clients on the first
 * stream, each in a group of its own; the first client's group is moved to the second stream
 * and back. Counted in 50 ms windows of each client's output: windows without the tone.
 */
export const SWITCH_STREAM = 'Announce';
const HZ = 440;
const WINDOW = SAMPLE_FORMAT.rate / 20;
const LEAD_MS = 100;

export interface SwitchGap {
  /** Windows without the tone on the client that changed streams, per move (to, back). */
  moved: number[];
  /** Windows without the tone on the client that stayed, over the whole run. */
  stayed: number;
}

/** Two TCP sources fed one PCM in step: the same chunk to both sockets in one pump. */
function inStepFeed(ports: number[]): { stop(): void; ready: Promise<void> } {
  const bps = SAMPLE_FORMAT.rate * SAMPLE_FORMAT.bytesPerFrame;
  const socks: Socket[] = ports.map((p) => connect(p, '127.0.0.1'));
  let fed = 0;
  let t0 = 0;
  let timer: NodeJS.Timeout | undefined;
  const ready = Promise.all(socks.map((s) => new Promise<void>((r) => s.once('connect', () => r())))).then(() => {
    t0 = performance.now();
    timer = setInterval(() => {
      const due = Math.floor((((performance.now() - t0) / 1000) * bps + (LEAD_MS / 1000) * bps) / 4) * 4;
      if (due <= fed) return;
      const n = (due - fed) / 4;
      const b = Buffer.alloc(n * 4);
      for (let i = 0; i < n; i++) {
        const v = Math.round(12000 * Math.sin((2 * Math.PI * HZ * (fed / 4 + i)) / SAMPLE_FORMAT.rate));
        b.writeInt16LE(v, i * 4);
        b.writeInt16LE(v, i * 4 + 2);
      }
      fed = due;
      for (const s of socks) s.write(b);
    }, 10);
  });
  return {
    ready,
    stop() {
      clearInterval(timer);
      for (const s of socks) s.destroy();
    },
  };
}

const missing = (file: string, from: number, to: number): number => {
  const s = leftChannel(captureFrom(file, from, SAMPLE_FORMAT.bytesPerFrame).subarray(0, to - from), SAMPLE_FORMAT.bytesPerFrame);
  let n = 0;
  for (let i = 0; i + WINDOW <= s.length; i += WINDOW) if (toneAmplitude(s, SAMPLE_FORMAT.rate, HZ, i, WINDOW) < 3000) n++;
  return n;
};

/** A lab of its own (snapserver declaring SWITCH_STREAM, two clients), `moves` changes of stream. */
export async function measureSwitchGapLab(moves: number): Promise<SwitchGap> {
  const env = await SnapcastEnv.create('speakerhub-switch-gap-', 'tcp', [SWITCH_STREAM]);
  try {
    await env.startServer();
    for (const n of [1, 2]) await env.startClient(n);
    await env.clientsConnected(env.clients.map((c) => c.hostId));
    return await measureSwitchGap(env, moves);
  } finally {
    await env.close();
  }
}

/** The env must declare SWITCH_STREAM (SnapcastEnv.create(..., [SWITCH_STREAM])) with clients 1 and 2 started and connected. */
export async function measureSwitchGap(env: SnapcastEnv, moves = 2): Promise<SwitchGap> {
  const conf = await readFile(join(env.dir, 'snapserver.conf'), 'utf8');
  const port = Number(new RegExp(`tcp://127\\.0\\.0\\.1:(\\d+)\\?name=${SWITCH_STREAM}`).exec(conf)![1]);
  const [c1, c2] = env.clients;
  // Each client in a group of its own, both on the hub stream.
  let s = await env.status();
  if (groupOf(s, c1.hostId).id === groupOf(s, c2.hostId).id) {
    const g = groupOf(s, c1.hostId);
    await env.rpc('Group.SetClients', { id: g.id, clients: [c2.hostId] });
    s = await env.status();
  }
  for (const c of [c1, c2]) await env.rpc('Group.SetStream', { id: groupOf(s, c.hostId).id, stream_id: HUB_STREAM });
  const feed = inStepFeed([env.sourcePort, port]);
  await feed.ready;
  try {
    const heard = (file: string, from: number) => fileSize(file) - from > SAMPLE_FORMAT.rate * SAMPLE_FORMAT.bytesPerFrame * 2;
    const from1 = fileSize(c1.file);
    const from2 = fileSize(c2.file);
    await eventually(() => heard(c1.file, from1) && heard(c2.file, from2), 15_000, 'both clients playing');
    // From here on, both should hear the tone without a break.
    const start2 = fileSize(c2.file);
    const moved: number[] = [];
    let target = SWITCH_STREAM;
    for (let m = 0; m < moves; m++) {
      const at = fileSize(c1.file);
      const g = groupOf(await env.status(), c1.hostId);
      await env.rpc('Group.SetStream', { id: g.id, stream_id: target });
      // 3 s of output after the move.
      await eventually(() => fileSize(c1.file) - at > 3 * SAMPLE_FORMAT.rate * SAMPLE_FORMAT.bytesPerFrame, 15_000, 'output after the move');
      moved.push(missing(c1.file, at, fileSize(c1.file)));
      target = target === SWITCH_STREAM ? HUB_STREAM : SWITCH_STREAM;
    }
    return { moved, stayed: missing(c2.file, start2, fileSize(c2.file)) };
  } finally {
    feed.stop();
  }
}
