#!/usr/bin/env node
'use strict';
/**
 * Announcements on real UPnP renderers (chained in npm run bench after bench:drivers, which
 * compiles the lab to .bench-build/; needs root for network namespaces): 3 gmediarender
 * renderers play music, announcements go to one of them.
 *  - announce latency: request sent → the renderer's first GET of the TTS audio (hub media
 *    server log), cached TTS, against the same for play_tts_selected_speakers (baseline);
 *  - restore latency: the renderer stopped after the announcement → announcement_status done
 *    (by then it plays the music again), polled every 25 ms. Goal < 1 s.
 * Exit code 0 whatever the figures say; 1 if the lab failed.
 */
const { join } = require('node:path');

const ROUNDS = Number(process.env.BENCH_ANNOUNCE_UPNP_ROUNDS || 5);
const build = join(__dirname, '..', '.bench-build', 'test', 'drivers', 'upnp');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : NaN;
};
const fmt = (x) => (Number.isFinite(x) ? x.toFixed(0) : 'n/a');

async function main() {
  const { UpnpLab, MEDIA, labUnavailableReason } = require(join(build, 'lab.js'));
  const why = labUnavailableReason();
  if (why) {
    console.log(`\nAnnouncements on UPnP: not measured (${why})`);
    return 0;
  }
  const lab = await UpnpLab.start({ prefix: 'shannb', subnet: '10.231.13' });
  try {
    const hub = lab.hub;
    const [r1] = lab.renderers;
    for (let i = 0; ; i++) {
      if ((await hub.op('device_count')).DeviceCount === '3') break;
      if (i > 150) throw new Error('renderers not discovered');
      await sleep(100);
    }
    const ids = await lab.mediaIds();
    const text = 'Someone is at the door';
    /** ms from the request to r1's first media GET after it. */
    const latency = async (run) => {
      const mark = hub.mark;
      const t0 = Date.now();
      const r = await run();
      if (r.Result !== 'true') throw new Error(JSON.stringify(r));
      for (;;) {
        const e = hub.lines.events.slice(mark).find((x) => x.evt === 'media' && x.method === 'GET' && x.from === r1.host.address);
        if (e) return { ms: e.t - t0, r };
        if (Date.now() - t0 > 15000) throw new Error('no media GET');
        await sleep(5);
      }
    };
    // Warm the TTS cache.
    await hub.op('play_tts_selected_speakers', { Text: text, DeviceIDList: r1.deviceId });
    await sleep(500);
    await hub.op('stop_play');
    const base = [];
    const ann = [];
    const restore = [];
    const audible = [];
    for (let i = 0; i < ROUNDS; i++) {
      base.push((await latency(() => hub.op('play_tts_selected_speakers', { Text: text, DeviceIDList: r1.deviceId }))).ms);
      await hub.op('stop_play');
      await hub.op('play_hub_media_party_mode', { PersistentID: ids[MEDIA.long] });
      const music = (await r1.position()).uri;
      const { ms, r } = await latency(() => hub.op('announce', { Text: text, DeviceIDList: r1.deviceId }));
      ann.push(ms);
      // Until r1 has played it out: the renderer goes idle on the TTS URI once it has played
      // it (it is also idle a moment before: the driver stops a playing renderer, then loads).
      let stoppedAt = 0;
      let spoke = false;
      for (;;) {
        const s = await r1.transportState();
        if (!spoke && s === 'PLAYING' && (await r1.position()).uri !== music) spoke = true;
        if (spoke && (s === 'STOPPED' || s === 'NO_MEDIA_PRESENT')) {
          stoppedAt = Date.now();
          break;
        }
        const st = await hub.op('announcement_status', { AnnouncementID: r.AnnouncementID });
        if (st.State === 'done' || st.State === 'failed') break;
        await sleep(25);
      }
      let heard = 0;
      for (;;) {
        if (!heard && stoppedAt && (await r1.transportState()) === 'PLAYING' && (await r1.position()).uri === music) {
          heard = Date.now();
          audible.push(heard - stoppedAt);
        }
        const st = await hub.op('announcement_status', { AnnouncementID: r.AnnouncementID });
        if (st.State === 'done') {
          if (stoppedAt) restore.push(Date.now() - stoppedAt);
          break;
        }
        if (st.State === 'failed') throw new Error(`announcement failed: ${st.Reason}`);
        await sleep(25);
      }
      await hub.op('stop_play');
    }
    console.log(`\nAnnouncements on UPnP (3 gmediarender renderers, ${ROUNDS} rounds)`);
    console.log('| Measurement | p50 ms | p95 ms | ratio p50 / baseline p50 | Goal |');
    console.log('|---|---|---|---|---|');
    console.log(`| play_tts_selected_speakers → renderer GET (cached TTS) [baseline] | ${fmt(pct(base, 50))} | ${fmt(pct(base, 95))} | 1.0 | |`);
    console.log(
      `| announce over music → renderer GET (cached TTS) | ${fmt(pct(ann, 50))} | ${fmt(pct(ann, 95))} | ${(pct(ann, 50) / pct(base, 50)).toFixed(2)} | |`,
    );
    console.log(
      `| restore: renderer stopped after it → PLAYING the music again (renderer) | ${fmt(pct(audible, 50))} | ${fmt(pct(audible, 95))} | | < 1000 ms |`,
    );
    console.log(
      `| restore: renderer stopped after it → done (the rejoin confirmed: position moving) | ${fmt(pct(restore, 50))} | ${fmt(pct(restore, 95))} | | |`,
    );
    return 0;
  } finally {
    await lab.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error('announce-upnp bench failed:', e);
    process.exit(1);
  },
);
