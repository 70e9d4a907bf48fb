#!/usr/bin/env node
'use strict';
/**
 * DLNA renderers (`node bench/dlna.js`; needs root for network namespaces and dist/ built):
 * hub A publishes virtual speakers as renderers on a private LAN (test/dlna/lab.ts, compiled
 * here to .bench-build/) and the bench talks to it from the root namespace.
 *  1. SetAVTransportURI + Play → the virtual speaker's first GET of the audio at the web
 *     server (p50/p95; goal < 100 ms), against REST play_web_media_selected_speakers → the
 *     same GET (baseline, same run);
 *  2. REST set_volume_device sent → the GENA NOTIFY with the new Volume received (p50; goal < 50 ms);
 *  3. Home Assistant's play on a renderer that is playing (dlna_dmr: Stop — answered once the
 *     STOPPED event reached its subscriber, here one that answers NOTIFY at once as HA's aiohttp
 *     does —, SetAVTransportURI, Play) → the speaker's first GET of the new media (p95; goal
 *     < 150 ms), against REST play_web_media_selected_speakers on the playing speaker (baseline);
 *  4. RSS per published renderer: a hub with 100 virtual speakers and --dlna (201 renderers)
 *     against the same hub without it, both after a full GC, same run.
 * Exit code 0 whatever the figures say; 1 if the lab failed.
 */
const { execFileSync } = require('node:child_process');
const { createServer } = require('node:http');
const { join } = require('node:path');

const REPO = join(__dirname, '..');
const ROUNDS = Number(process.env.BENCH_DLNA_ROUNDS || 20);
const OUT = join(REPO, '.bench-build', 'dlna');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : NaN;
};
const fmt = (x) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');

function compileLab() {
  execFileSync(
    process.execPath,
    [
      join(REPO, 'node_modules/typescript/bin/tsc'),
      '--outDir',
      OUT,
      '--rootDir',
      REPO,
      '--module',
      'commonjs',
      '--target',
      'ES2022',
      '--esModuleInterop',
      '--skipLibCheck',
      '--types',
      'node',
      join(REPO, 'test/dlna/lab.ts'),
    ],
    { cwd: REPO, stdio: 'inherit' },
  );
  return require(join(OUT, 'test/dlna/lab.js'));
}

async function main() {
  const { DlnaLab, soap, http, labUnavailableReason } = compileLab();
  const why = labUnavailableReason();
  if (why) {
    console.log(`\nDLNA renderers: not measured (${why})`);
    return 0;
  }
  const lab = await DlnaLab.start();
  try {
    const hub = await lab.startHubA(['Kitchen', 'Living Room', 'Office']);
    const hubAddress = lab.lan.host('hub').address;
    const kitchen = hub.renderer('Kitchen').location;
    const ids = Object.fromEntries((await hub.op('device_list')).DeviceList.map((d) => [d.DeviceName, d.DeviceID]));
    const url = `${lab.webUrl}/long.wav`;

    /** ms from t0 to hub A's first GET of the file (long.wav) after the mark. */
    const firstGet = async (mark, t0, path = '/long.wav') => {
      for (;;) {
        const e = lab.web.events.slice(mark).find((x) => x.evt === 'get' && x.method === 'GET' && x.path === path && x.from === hubAddress);
        if (e) return e.t - t0;
        if (Date.now() - t0 > 15000) throw new Error('no GET of the audio');
        await sleep(2);
      }
    };
    const dlnaPlay = [];
    const restPlay = [];
    for (let i = 0; i < ROUNDS; i++) {
      let mark = lab.webMark;
      let t0 = Date.now();
      await soap(kitchen, 'AVTransport', 'SetAVTransportURI', { InstanceID: 0, CurrentURI: url, CurrentURIMetaData: '' });
      await soap(kitchen, 'AVTransport', 'Play', { InstanceID: 0, Speed: 1 });
      dlnaPlay.push(await firstGet(mark, t0));
      await hub.op('stop_play');
      mark = lab.webMark;
      t0 = Date.now();
      await hub.op('play_web_media_selected_speakers', { MediaUrl: url, DeviceIDList: ids.Kitchen });
      restPlay.push(await firstGet(mark, t0));
      await hub.op('stop_play');
    }

    // GENA: a callback server on the root namespace's LAN address.
    const notifies = [];
    const server = createServer((req, res) => {
      const parts = [];
      req.on('data', (c) => parts.push(c));
      req.on('end', () => {
        notifies.push({ t: Date.now(), body: Buffer.concat(parts).toString() });
        res.end();
      });
    });
    await new Promise((r) => server.listen(0, lab.lan.root.address, r));
    const ev = kitchen.replace(/description\.xml$/, 'RenderingControl/event');
    const sub = await http('SUBSCRIBE', ev, {
      CALLBACK: `<http://${lab.lan.root.address}:${server.address().port}/>`,
      NT: 'upnp:event',
      TIMEOUT: 'Second-300',
    });
    if (sub.status !== 200) throw new Error(`SUBSCRIBE answered ${sub.status}`);
    while (!notifies.length) await sleep(5);
    const gena = [];
    for (let i = 0; i < ROUNDS * 2; i++) {
      const v = 10 + (i % 2) * 10; // 10 and 20: Volume 20 / 40 on 0–100
      const mark = notifies.length;
      const t0 = Date.now();
      await hub.op('set_volume_device', { DeviceID: ids.Kitchen, Volume: String(v) });
      for (;;) {
        const n = notifies.slice(mark).find((x) => x.body.includes(`Volume channel=&quot;Master&quot; val=&quot;${v * 2}&quot;`));
        if (n) {
          gena.push(n.t - t0);
          break;
        }
        if (Date.now() - t0 > 10000) throw new Error('no LastChange');
        await sleep(1);
      }
    }
    // Home Assistant's play on a playing renderer, with its AVTransport subscription.
    const avt = await http('SUBSCRIBE', kitchen.replace(/description\.xml$/, 'AVTransport/event'), {
      CALLBACK: `<http://${lab.lan.root.address}:${server.address().port}/>`,
      NT: 'upnp:event',
      TIMEOUT: 'Second-300',
    });
    if (avt.status !== 200) throw new Error(`SUBSCRIBE AVTransport answered ${avt.status}`);
    const next = `${lab.webUrl}/next.wav`;
    const haReplace = [];
    const restReplace = [];
    for (let i = 0; i < ROUNDS; i++) {
      let mark = lab.webMark;
      await hub.op('play_web_media_selected_speakers', { MediaUrl: url, DeviceIDList: ids.Kitchen });
      await firstGet(mark, Date.now());
      mark = lab.webMark;
      let t0 = Date.now();
      await soap(kitchen, 'AVTransport', 'Stop', { InstanceID: 0 });
      await soap(kitchen, 'AVTransport', 'SetAVTransportURI', { InstanceID: 0, CurrentURI: next, CurrentURIMetaData: '' });
      await soap(kitchen, 'AVTransport', 'Play', { InstanceID: 0, Speed: 1 });
      haReplace.push(await firstGet(mark, t0, '/next.wav'));
      mark = lab.webMark;
      await hub.op('play_web_media_selected_speakers', { MediaUrl: url, DeviceIDList: ids.Kitchen });
      await firstGet(mark, Date.now());
      mark = lab.webMark;
      t0 = Date.now();
      await hub.op('play_web_media_selected_speakers', { MediaUrl: next, DeviceIDList: ids.Kitchen });
      restReplace.push(await firstGet(mark, t0, '/next.wav'));
      await hub.op('stop_play');
    }
    server.close();
    await hub.stop();

    // RSS: 100 speakers with and without --dlna, both hubs in this run.
    const names = Array.from({ length: 100 }, (_, i) => `Speaker ${i + 1}`);
    const withDlna = await lab.startHubA(names, {
      host: 'hub',
      port: 8093,
      nodeArgs: ['--expose-gc'],
      config: { dataDir: join(lab.tmp, 'rss-dlna') },
    });
    const without = await lab.startHubA(names, {
      host: 'hubb',
      port: 8094,
      dlna: false,
      nodeArgs: ['--expose-gc'],
      config: { dataDir: join(lab.tmp, 'rss-plain') },
    });
    await sleep(2000);
    const rss = async (h) => {
      const mark = h.mark;
      h.child.stdin.write('rss\n');
      return (await h.lines.waitFor((e) => e.evt === 'rss', 5000, 'rss', mark)).rss;
    };
    const rounds = [];
    for (let i = 0; i < 3; i++) rounds.push([await rss(withDlna), await rss(without)]);
    const [a, b] = rounds.sort((x, y) => x[0] - x[1] - (y[0] - y[1]))[1];
    const renderers = (await withDlna.currentRenderers()).length;

    console.log('\nDLNA renderers (virtual speakers, private LAN of namespaces)');
    console.log(
      `  SetAVTransportURI+Play → speaker fetches audio:  p50 ${fmt(pct(dlnaPlay, 50))} ms  p95 ${fmt(pct(dlnaPlay, 95))} ms  (goal < 100 ms)`,
    );
    console.log(`  REST play_web_media_selected_speakers (baseline): p50 ${fmt(pct(restPlay, 50))} ms  p95 ${fmt(pct(restPlay, 95))} ms`);
    console.log(
      `  HA play on a playing renderer (Stop, Set…URI, Play) → new media fetched: p50 ${fmt(pct(haReplace, 50))} ms  p95 ${fmt(pct(haReplace, 95))} ms  (goal < 150 ms)`,
    );
    console.log(`  REST play on the playing speaker (baseline):       p50 ${fmt(pct(restReplace, 50))} ms  p95 ${fmt(pct(restReplace, 95))} ms`);
    console.log(`  set_volume_device → GENA LastChange received:     p50 ${fmt(pct(gena, 50))} ms  p95 ${fmt(pct(gena, 95))} ms  (goal < 50 ms)`);
    console.log(
      `  RSS, 100 speakers: ${(a / 1048576).toFixed(1)} MiB with --dlna (${renderers} renderers) vs ${(b / 1048576).toFixed(1)} MiB without: ` +
        `${((a - b) / 1024 / renderers).toFixed(1)} KiB per renderer`,
    );
    return 0;
  } finally {
    await lab.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
