import { systemClock } from '../../../src/core/clock';
import { fetchDescription } from '../../../src/protocols/upnp/description-parse';
import { parseTime } from '../../../src/protocols/upnp/didl';
import { didlLite } from '../../../src/drivers/upnp/didl';
import { parseLastChange } from '../../../src/protocols/upnp/gena';
import { GenaServer, GenaSubscription } from '../../../src/protocols/upnp/gena-subscriber';
import { createLogger } from '../../../src/logger';
import { MEDIA, UpnpLab, type Renderer } from './lab';
import { eventually, sleep } from '../../helpers/wait';

/**
 * Measures, on the lab's real renderers:
 *  - party-mode start skew: from the play_hub_media_party_mode request to each renderer's
 *    first media GET (seen by the hub's media server) and to each renderer's PLAYING (seen by
 *    an independent GENA subscriber in the test process); the spread is max − min over the
 *    renderers, reported as the median (and worst) over `rounds` plays;
 *  - control round trips through the hub's REST API versus the same SOAP done directly:
 *    SetVolume (set_volume_device vs SetVolume), and a play (play_web_media_selected_speakers
 *    vs Stop + SetAVTransportURI + Play, and vs the same plus waiting for the position to
 *    advance, which is what the hub's answer guarantees).
 *
 * Call with a running lab (the test suite does) or without (it builds and removes its own).
 */

export interface Phase {
  /** Median ms from the request, per renderer name. */
  medianMsByRenderer: Record<string, number>;
  /** Median over rounds of (latest − earliest renderer). */
  spreadMs: number;
  /** Worst round's spread. */
  maxSpreadMs: number;
}

export interface RoundTrip {
  hubMs: number;
  rawMs: number;
  /** hubMs / rawMs. */
  ratio: number;
}

export interface SkewReport {
  rounds: number;
  renderers: string[];
  firstGet: Phase;
  playing: Phase;
  control: {
    setVolume: RoundTrip;
    /** rawMs: Stop + SetAVTransportURI + Play. */
    play: RoundTrip & { rawConfirmedMs: number; confirmedRatio: number };
  };
}

export async function measureUpnpSkew(options: { lab?: UpnpLab; rounds?: number } = {}): Promise<SkewReport> {
  const own = !options.lab;
  const lab = options.lab ?? (await UpnpLab.start());
  try {
    return await measure(lab, options.rounds ?? 5);
  } finally {
    if (own) await lab.stop();
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : NaN;
};
const round1 = (x: number) => Math.round(x * 10) / 10;

async function measure(lab: UpnpLab, rounds: number): Promise<SkewReport> {
  const { hub } = lab;
  const renderers = lab.renderers;
  await eventually(async () => Number((await hub.op('device_count')).DeviceCount) >= renderers.length, 15_000, 'all renderers discovered');
  await eventually(
    async () => ((await hub.op('device_list')).DeviceList as { Active: boolean }[]).every((d) => d.Active),
    15_000,
    'all renderers available',
  );
  const ids = await lab.mediaIds();
  const root = lab.lan.root.address;
  const logger = createLogger({ level: 'silent' });

  // An observer of its own: when each renderer *says* PLAYING, independent of the hub.
  const gena = new GenaServer({ address: root, port: 0, logger });
  await gena.start();
  let round: Map<Renderer, number> | undefined;
  const subs: GenaSubscription[] = [];
  try {
    for (const r of renderers) {
      const { description } = await fetchDescription(r.location, { timeoutMs: 3000, localAddress: root });
      const sub = new GenaSubscription({
        server: gena,
        eventSubUrl: description.avTransport.eventSubUrl,
        callbackHost: root,
        timeoutSeconds: 300,
        requestTimeoutMs: 3000,
        localAddress: root,
        clock: systemClock,
        logger,
        onEvent: (p) => {
          const at = Date.now();
          if (!round || round.has(r) || !p.LastChange) return;
          if (parseLastChange(p.LastChange).TransportState === 'PLAYING') round.set(r, at);
        },
        onLost: () => undefined,
      });
      await sub.subscribe();
      subs.push(sub);
    }

    const gets: Map<Renderer, number>[] = [];
    const playing: Map<Renderer, number>[] = [];
    for (let i = 0; i < rounds; i++) {
      await hub.op('stop_play');
      await eventually(
        async () => (await Promise.all(renderers.map((r) => r.transportState()))).every((s) => s !== 'PLAYING'),
        5000,
        'renderers idle',
      );
      await sleep(500); // let the Stop events drain before the clock starts
      const mark = hub.mark;
      const thisRound = new Map<Renderer, number>();
      round = thisRound;
      const t0 = Date.now();
      const res = await hub.op('play_hub_media_party_mode', { PersistentID: ids[MEDIA.long] });
      if (res.Result !== 'true') throw new Error(`party play failed: ${JSON.stringify(res)}`);
      await eventually(() => thisRound.size === renderers.length, 5000, 'PLAYING from every renderer');
      round = undefined;
      const firstGet = new Map<Renderer, number>();
      for (const e of hub.lines.events.slice(mark)) {
        const r = renderers.find((x) => x.host.address === e.from);
        if (e.evt === 'media' && e.method === 'GET' && r && !firstGet.has(r)) firstGet.set(r, e.t! - t0);
      }
      if (firstGet.size !== renderers.length) throw new Error('not every renderer fetched the media');
      gets.push(firstGet);
      playing.push(new Map([...thisRound].map(([r, t]) => [r, t - t0])));
    }
    await hub.op('stop_play');

    return {
      rounds,
      renderers: renderers.map((r) => r.spec.friendlyName),
      firstGet: phase(renderers, gets),
      playing: phase(renderers, playing),
      control: { setVolume: await volumeRoundTrips(lab), play: await playRoundTrips(lab) },
    };
  } finally {
    round = undefined;
    await Promise.all(subs.map((s) => s.close(true)));
    await gena.stop();
  }
}

function phase(renderers: Renderer[], rounds: Map<Renderer, number>[]): Phase {
  const spreads = rounds.map((m) => Math.max(...m.values()) - Math.min(...m.values()));
  return {
    medianMsByRenderer: Object.fromEntries(renderers.map((r) => [r.spec.friendlyName, round1(median(rounds.map((m) => m.get(r)!)))])),
    spreadMs: round1(median(spreads)),
    maxSpreadMs: round1(Math.max(...spreads)),
  };
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

async function volumeRoundTrips(lab: UpnpLab, n = 15): Promise<RoundTrip> {
  const r = lab.renderers[0];
  await r.volume(); // warm up: the direct client reads the description once
  const hub: number[] = [];
  const raw: number[] = [];
  for (let i = 0; i < n; i++) {
    const v = 10 + (i % 20);
    hub.push(
      await timed(async () => {
        const res = await lab.hub.op('set_volume_device', { DeviceID: r.deviceId, Volume: String(v) });
        if (res.Result !== 'true') throw new Error(`set_volume_device failed: ${JSON.stringify(res)}`);
      }),
    );
    raw.push(await timed(() => r.soap('RenderingControl', 'SetVolume', { DesiredVolume: 2 * v + 1 })));
  }
  const hubMs = median(hub);
  const rawMs = median(raw);
  return { hubMs: round1(hubMs), rawMs: round1(rawMs), ratio: round1(hubMs / rawMs) };
}

async function playRoundTrips(lab: UpnpLab, n = 3): Promise<RoundTrip & { rawConfirmedMs: number; confirmedRatio: number }> {
  const r = lab.renderers[0];
  const url = `${lab.webUrl}/song.mp3`;
  const hub: number[] = [];
  const raw: number[] = [];
  const confirmed: number[] = [];
  for (let i = 0; i < n; i++) {
    hub.push(
      await timed(async () => {
        const res = await lab.hub.op('play_web_media_selected_speakers', { MediaUrl: url, DeviceIDList: r.deviceId });
        if (res.Result !== 'true') throw new Error(`play failed: ${JSON.stringify(res)}`);
      }),
    );
    await lab.hub.op('stop_play');
    await sleep(300);
    const t = performance.now();
    await r.soap('AVTransport', 'Stop').catch(() => undefined);
    await r.soap('AVTransport', 'SetAVTransportURI', {
      CurrentURI: url,
      CurrentURIMetaData: didlLite({ url, contentType: 'audio/mpeg', title: 'skew' }),
    });
    await r.soap('AVTransport', 'Play', { Speed: '1' });
    raw.push(performance.now() - t);
    let prev: number | undefined;
    for (;;) {
      const rel = parseTime((await r.soap('AVTransport', 'GetPositionInfo')).RelTime) ?? 0;
      if (prev !== undefined && rel > prev) break;
      prev = rel;
      if (performance.now() - t > 10_000) throw new Error('raw play did not advance');
      await sleep(200);
    }
    confirmed.push(performance.now() - t);
    await r.soap('AVTransport', 'Stop');
    await sleep(300);
  }
  const hubMs = median(hub);
  return {
    hubMs: round1(hubMs),
    rawMs: round1(median(raw)),
    ratio: round1(hubMs / median(raw)),
    rawConfirmedMs: round1(median(confirmed)),
    confirmedRatio: round1(hubMs / median(confirmed)),
  };
}
