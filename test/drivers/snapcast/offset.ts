import type { Readable } from 'node:stream';
import { encodeWav } from '../../../src/audio/wav';
import { SAMPLE_FORMAT, SnapcastEnv } from './harness';
import { startSnapcastHub } from './hub';

/**
 * Inter-client offset of a Snapcast party play, measured on real snapclients.
 *
 * Why not simply "the marker's sample index in each client's raw file": snapclient 0.26's
 * file player (client/player/file_player.cpp) writes every 50 ms, on a steady-clock timer,
 * the 50 ms block that the synchronised stream says should reach the DAC 10 ms later
 * (Stream::getPlayerChunkOrSilence(buffer, 10ms, frames)), and silence when it has
 * nothing. So a file is the client's play-out timeline, but each file starts at its own
 * instant: when that client's player was (re)created, which also happens on every stream
 * switch. Sample index N in one file and index N in another are not the same moment, and
 * comparing indexes measures when the players started, not how well they play in sync.
 *
 * What is measured instead: each client writes to stdout (`--player file:filename=stdout`),
 * a pipe read here, and every read is stamped with the monotonic clock (the clock
 * snapclient's timer runs on). Block k of a client is written at c_k = c_0 + k·50 ms;
 * every read bounds c_k from above, and the tightest bound over the reads around the
 * marker pins c_k to within the pipe's wake-up latency (tens of µs, about the same for
 * every client). The marker then plays at c_k + 10 ms + (its index within block k)/rate,
 * and the spread of those instants across the clients is the inter-client offset.
 */

export interface OffsetOptions {
  /** Markers in the test signal, one measurement each. Default 4. */
  markers?: number;
  /** snapclients in the party. Default 3. */
  clients?: number;
  /**
   * snapcast's per-client latency (ms) by client number (1-based), set before the play: a
   * client with latency L plays L ms early. Used to check that the method sees a known offset.
   */
  latencyMs?: Record<number, number>;
}

export interface MarkerMeasurement {
  /** Seconds into the media. */
  at: number;
  /** Play-out instant of the marker per client (in client order), ms after the earliest client. */
  perClientMs: number[];
  /** max − min of perClientMs. */
  spreadMs: number;
}

export interface OffsetResult {
  /** The worst spread over all markers (ms). Target: < 0.5. */
  spreadMs: number;
  medianSpreadMs: number;
  markers: MarkerMeasurement[];
  /**
   * How tightly the write instants are pinned: per client, the median minus the minimum of
   * the bounds on c_k (ms). Spreads well above this are real offsets, not timing noise.
   */
  timingNoiseMs: number;
  method: string;
}

const BLOCK_FRAMES = SAMPLE_FORMAT.rate / 20; // the file player's 50 ms
const BLOCK_NS = 50_000_000n;
const DAC_NS = 10_000_000n;
const MARKER_SPACING_S = 1.5;

/** Silence with a sharp onset (20 ms of a loud 1 kHz square) every 1.5 s, at the stream's own rate so nothing is resampled. */
function markerWav(markers: number): { wav: Buffer; at: number[] } {
  const rate = SAMPLE_FORMAT.rate;
  const at = Array.from({ length: markers }, (_, i) => MARKER_SPACING_S * (i + 1));
  const samples = new Int16Array(Math.round(rate * (MARKER_SPACING_S * (markers + 1))));
  for (const t of at) {
    const start = Math.round(t * rate);
    for (let i = 0; i < rate / 50; i++) samples[start + i] = Math.floor((i * 1000) / rate) % 2 === 0 ? 24000 : -24000;
  }
  return { wav: encodeWav(samples, rate, { title: 'Sync Marker', artist: 'SpeakerHub', album: 'Benchmark' }), at };
}

interface Capture {
  chunks: Buffer[];
  /** [frames received in total, monotonic ns when the read arrived] per read. */
  reads: [number, bigint][];
  frames: number;
}

function capture(stdout: Readable): Capture {
  const c: Capture = { chunks: [], reads: [], frames: 0 };
  let bytes = 0;
  stdout.on('data', (d: Buffer) => {
    const now = process.hrtime.bigint();
    c.chunks.push(d);
    bytes += d.length;
    c.frames = Math.floor(bytes / SAMPLE_FORMAT.bytesPerFrame);
    c.reads.push([c.frames, now]);
  });
  return c;
}

/** First frame from `fromFrame` on whose left sample is louder than the threshold. */
function findOnset(pcm: Buffer, fromFrame: number, threshold = 12000): number {
  for (let f = fromFrame; (f + 1) * SAMPLE_FORMAT.bytesPerFrame <= pcm.length; f++) {
    if (Math.abs(pcm.readInt16LE(f * SAMPLE_FORMAT.bytesPerFrame)) > threshold) return f;
  }
  return -1;
}

/** The write instant of block k: the tightest upper bound from the reads within ±1.25 s of it. */
function blockTime(reads: [number, bigint][], k: number): { t: bigint; noiseNs: bigint } {
  const bounds: bigint[] = [];
  for (const [frames, arrived] of reads) {
    const last = Math.floor(frames / BLOCK_FRAMES) - 1; // last block complete at this read
    if (last < 0 || Math.abs(last - k) > 25) continue;
    bounds.push(arrived - BigInt(last - k) * BLOCK_NS);
  }
  if (!bounds.length) throw new Error(`no reads around block ${k}`);
  bounds.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return { t: bounds[0], noiseNs: bounds[Math.floor(bounds.length / 2)] - bounds[0] };
}

/** Starts snapserver, the clients and a hub, plays the marker signal as a party play, and measures. */
export async function measureSnapcastOffset(options: OffsetOptions = {}): Promise<OffsetResult> {
  const markers = options.markers ?? 4;
  const n = options.clients ?? 3;
  const env = await SnapcastEnv.create('speakerhub-snapcast-offset-');
  let hub: Awaited<ReturnType<typeof startSnapcastHub>> | undefined;
  try {
    await env.startServer();
    const captures: Capture[] = [];
    for (let i = 1; i <= n; i++) {
      const c = await env.startClient(i, { output: 'stdout' });
      captures.push(capture(c.proc!.stdout!));
    }
    await env.clientsConnected(env.clients.map((c) => c.hostId));
    for (const [i, latency] of Object.entries(options.latencyMs ?? {})) {
      await env.rpc('Client.SetLatency', { id: env.clients[Number(i) - 1].hostId, latency });
    }
    const { wav, at } = markerWav(markers);
    hub = await startSnapcastHub(env.address, { 'marker.wav': wav });
    const pid = (await hub.op('media_list')).MediaList[0].PersistentID;
    const startFrames = captures.map((c) => c.frames);
    const r = await hub.op('play_hub_media_party_mode', { PersistentID: pid });
    if (r.Result !== 'true') throw new Error(`party play failed: ${JSON.stringify(r)}`);
    // The media, snapserver's 1 s buffer, and some slack.
    await new Promise((res) => setTimeout(res, (MARKER_SPACING_S * (markers + 1) + 1.8) * 1000));

    const pcm = captures.map((c) => Buffer.concat(c.chunks));
    const onsets: number[][] = captures.map(() => []);
    captures.forEach((_, j) => {
      let from = startFrames[j];
      for (let m = 0; m < markers; m++) {
        const f = findOnset(pcm[j], from);
        if (f < 0) throw new Error(`client ${j + 1} has no marker ${m + 1} in its output`);
        onsets[j].push(f);
        from = f + SAMPLE_FORMAT.rate / 2; // past this marker's burst
      }
    });
    let noise = 0n;
    const results: MarkerMeasurement[] = at.map((t, m) => {
      const instants = captures.map((c, j) => {
        const f = onsets[j][m];
        const k = Math.floor(f / BLOCK_FRAMES);
        const { t: ck, noiseNs } = blockTime(c.reads, k);
        if (noiseNs > noise) noise = noiseNs;
        const within = BigInt(Math.round(((f - k * BLOCK_FRAMES) * 1e9) / SAMPLE_FORMAT.rate));
        return ck + DAC_NS + within;
      });
      const min = instants.reduce((a, b) => (a < b ? a : b));
      const perClientMs = instants.map((x) => Number(x - min) / 1e6);
      return { at: t, perClientMs, spreadMs: Math.max(...perClientMs) };
    });
    const spreads = results.map((x) => x.spreadMs).sort((a, b) => a - b);
    return {
      spreadMs: spreads[spreads.length - 1],
      medianSpreadMs: spreads[Math.floor(spreads.length / 2)],
      markers: results,
      timingNoiseMs: Number(noise) / 1e6,
      method:
        'snapclient --player file:filename=stdout; marker play-out instant = write instant of its 50 ms block ' +
        '(tightest bound from monotonic read stamps) + 10 ms DAC lead + offset within the block',
    };
  } finally {
    await hub?.close();
    await env.close();
  }
}
