import { connect, type Socket } from 'node:net';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileSize, groupOf, HUB_STREAM, SAMPLE_FORMAT, SnapcastEnv } from './harness';
import { captureFrom, leftChannel, toneAmplitude } from '../../helpers/audio';
import { eventually } from '../../helpers/wait';

/**
 * What a snapclient misses when what it plays changes source (issue 30), measured on real
 * snapserver/snapclients (bench/snapcast-duck-gaps.js): two hub-fed streams carrying the same
 * 440 Hz PCM written at the same moments (one pacer, both sockets), two clients, each in a
 * group of its own. Counted in 50 ms windows of each client's output: windows without the tone.
 *  - measureSwitchGap: the first client's group is moved to the second stream and back
 *    (Group.SetStream, what the hub does for a shared-music duck).
 *  - measureMetaSwitchLab: the first client plays a snapserver meta stream
 *    (`meta:///<second>/<first>`), which plays the second stream while it is fed and the
 *    first otherwise; the second stream's feed starts and stops.
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

/** Two TCP sources fed one PCM in step: the same chunk to both sockets in one pump (a muted one gets nothing). */
function inStepFeed(ports: number[]): { stop(): void; ready: Promise<void>; muted: Set<number> } {
  const muted = new Set<number>();
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
      socks.forEach((s, i) => muted.has(i) || s.write(b));
    }, 10);
  });
  return {
    ready,
    muted,
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

export const META_STREAM = 'SwitchMeta';

export interface MetaSwitchGap {
  /** Windows without the tone on the meta stream's client when the second stream starts (the meta takes it), per round. */
  in: number[];
  /** The same when the second stream stops (the meta goes back to the first). */
  out: number[];
  /** Windows without the tone on the client of the first stream, over the whole run. */
  stayed: number;
}

/** A lab of its own (snapserver declaring SWITCH_STREAM and META_STREAM over it and the hub stream), `rounds` start/stop rounds. */
export async function measureMetaSwitchLab(rounds: number): Promise<MetaSwitchGap> {
  const env = await SnapcastEnv.create('speakerhub-meta-switch-', 'tcp', [SWITCH_STREAM]);
  try {
    const confFile = join(env.dir, 'snapserver.conf');
    const conf = await readFile(confFile, 'utf8');
    await writeFile(confFile, conf.replace('[http]', `source = meta:///${SWITCH_STREAM}/${HUB_STREAM}?name=${META_STREAM}\n[http]`));
    await env.startServer();
    for (const n of [1, 2]) await env.startClient(n);
    await env.clientsConnected(env.clients.map((c) => c.hostId));
    const port = Number(new RegExp(`tcp://127\\.0\\.0\\.1:(\\d+)\\?name=${SWITCH_STREAM}`).exec(conf)![1]);
    const [c1, c2] = env.clients;
    let s = await env.status();
    if (groupOf(s, c1.hostId).id === groupOf(s, c2.hostId).id) {
      await env.rpc('Group.SetClients', { id: groupOf(s, c1.hostId).id, clients: [c2.hostId] });
      s = await env.status();
    }
    await env.rpc('Group.SetStream', { id: groupOf(s, c1.hostId).id, stream_id: META_STREAM });
    await env.rpc('Group.SetStream', { id: groupOf(s, c2.hostId).id, stream_id: HUB_STREAM });
    const feed = inStepFeed([env.sourcePort, port]);
    feed.muted.add(1);
    await feed.ready;
    try {
      const second = SAMPLE_FORMAT.rate * SAMPLE_FORMAT.bytesPerFrame;
      const from1 = fileSize(c1.file);
      const from2 = fileSize(c2.file);
      await eventually(() => fileSize(c1.file) - from1 > 2 * second && fileSize(c2.file) - from2 > 2 * second, 15_000, 'both clients playing');
      const start2 = fileSize(c2.file);
      const span = async (): Promise<number> => {
        const at = fileSize(c1.file);
        await eventually(() => fileSize(c1.file) - at > 3 * second, 15_000, 'output after the change');
        return missing(c1.file, at, fileSize(c1.file));
      };
      const r: MetaSwitchGap = { in: [], out: [], stayed: 0 };
      for (let i = 0; i < rounds; i++) {
        feed.muted.delete(1);
        r.in.push(await span());
        feed.muted.add(1);
        r.out.push(await span());
      }
      r.stayed = missing(c2.file, start2, fileSize(c2.file));
      return r;
    } finally {
      feed.stop();
    }
  } finally {
    await env.close();
  }
}
