import { snapcastDeviceId } from '../../../src/drivers/snapcast';
import { StampedCapture, monoMs } from '../../party/stamped-capture';
import { HUB_STREAM, SnapcastEnv } from './harness';
import { startSnapcastHub, toneWav, TOKEN, type SnapcastHub } from './hub';
import { eventually } from '../../helpers/wait';

/**
 * Snapcast zones under load (issue 27), for bench/snapcast-zones.js: start latency per zone
 * (REST request sent → both of the zone's snapclients output its tone) and in-zone skew (the
 * two clients' output instants of the tone's onset), for ZONES zones started at once by as
 * many REST sessions, each on a pool stream of its own, against one zone started alone in the
 * same run (the baseline). Real snapserver and snapclients on loopback; output instants from
 * read-stamped stdout captures (test/party/stamped-capture.ts), the request instant on the
 * same monotonic clock.
 */
const ZONES = 3;
const PER_ZONE = 2;
const POOL = [HUB_STREAM, 'SpeakerHub2', 'SpeakerHub3'];
const ZONE_HZ = [440, 560, 700];
/** The tones peak at 12000; the first sample this loud is the onset. */
const ONSET = 2000;

export interface ZoneSample {
  /** Request sent → the later of the zone's two clients output the onset (ms). */
  latencyMs: number;
  /** |difference| of the two clients' onset output instants (ms). */
  skewMs: number;
}

export interface SnapcastZonesResult {
  rounds: number;
  zones: number;
  perZone: number;
  alone: ZoneSample[];
  together: ZoneSample[];
}

export async function measureSnapcastZones(options: { rounds?: number } = {}): Promise<SnapcastZonesResult> {
  const rounds = options.rounds ?? 5;
  const env = await SnapcastEnv.create('speakerhub-bench-snapzones-', 'tcp', POOL.slice(1));
  let t: SnapcastHub | undefined;
  try {
    await env.startServer();
    const caps: StampedCapture[] = [];
    for (let n = 1; n <= ZONES * PER_ZONE; n++) caps.push(new StampedCapture((await env.startClient(n, { output: 'stdout' })).proc!.stdout!));
    await env.clientsConnected(env.clients.map((c) => c.hostId));
    const media: Record<string, Buffer> = {};
    ZONE_HZ.forEach((hz, z) => (media[`zone-${z + 1}.wav`] = toneWav(30, hz, `Zone ${z + 1}`)));
    const hub = await startSnapcastHub(env.address, media, { zoneStreams: POOL.slice(1) });
    t = hub;
    const ids = env.clients.map((c) => snapcastDeviceId(env.address, c.hostId));
    const pids: Record<string, string> = {};
    for (const m of (await hub.op('media_list')).MediaList) pids[m.Title] = m.PersistentID;
    await eventually(async () => (await hub.op('device_list')).DeviceList.filter((d: any) => d.Active).length === ids.length, 10_000, 'every client');

    const get = async (path: string) => (await fetch(hub.base + path, { headers: { Authorization: `Bearer ${TOKEN}` } })).json() as Promise<any>;
    // One session per zone, as separate REST clients would have.
    const sessions: string[] = [];
    for (let z = 0; z < ZONES; z++) sessions.push((await get('/api/v1/init_session')).SessionToken);
    const clientsOf = (z: number) => Array.from({ length: PER_ZONE }, (_, j) => z * PER_ZONE + j);

    /** Starts zones 0..count-1 at once; resolves with each zone's figures once all its clients output the tone. */
    async function play(count: number): Promise<ZoneSample[]> {
      const marks = caps.map((c) => c.frames);
      const sent: number[] = [];
      const results = await Promise.all(
        Array.from({ length: count }, async (_, z) => {
          const q = new URLSearchParams({
            SessionToken: sessions[z],
            PersistentID: pids[`Zone ${z + 1}`],
            DeviceIDList: clientsOf(z)
              .map((n) => ids[n])
              .join(','),
          });
          sent[z] = monoMs();
          return get(`/api/v1/play_hub_media_selected_speakers?${q}`);
        }),
      );
      results.forEach((r, z) => {
        if (r.Result !== 'true') throw new Error(`zone ${z + 1}: play failed: ${JSON.stringify(r)}`);
      });
      const onsets: (number | undefined)[] = caps.map(() => undefined);
      const wanted = Array.from({ length: count }, (_, z) => clientsOf(z)).flat();
      await eventually(
        () => {
          for (const n of wanted) {
            if (onsets[n] !== undefined) continue;
            const f = caps[n].firstLoud(marks[n], ONSET);
            // Half a second past the onset: read stamps on both sides of its block pin its write instant.
            if (f >= 0 && caps[n].frames - f > 24_000) onsets[n] = caps[n].outputMs(f);
          }
          return wanted.every((n) => onsets[n] !== undefined);
        },
        15_000,
        () => `every zone's clients playing (onsets ${JSON.stringify(onsets)})`,
      );
      return Array.from({ length: count }, (_, z) => {
        const at = clientsOf(z).map((n) => onsets[n]!);
        return { latencyMs: Math.max(...at) - sent[z], skewMs: Math.max(...at) - Math.min(...at) };
      });
    }
    /** Stops every zone (the hub's first session has no speakers of its own: its stop_play stops them all) and waits for quiet. */
    async function stopAll(): Promise<void> {
      await hub.op('stop_play');
      await eventually(async () => (await hub.op('playback_list')).PlaybackList.length === 0, 10_000, 'every zone stopped');
      await eventually(async () => (await env.status()).groups.every((g: any) => !POOL.slice(1).includes(g.stream_id)), 10_000, 'the pool released');
      // Until every client has output 0.3 s of silence: the next onset is the next play's.
      await eventually(() => caps.every((c) => c.frames > 14_400 && c.firstLoud(c.frames - 14_400, 200) < 0), 10_000, 'every client silent');
    }

    const alone: ZoneSample[] = [];
    const together: ZoneSample[] = [];
    // Interleaved, so that the machine's load over the run weighs on both alike.
    for (let r = 0; r < rounds; r++) {
      alone.push(...(await play(1)));
      await stopAll();
      together.push(...(await play(ZONES)));
      await stopAll();
    }
    return { rounds, zones: ZONES, perZone: PER_ZONE, alone, together };
  } finally {
    await t?.close();
    await env.close();
  }
}
