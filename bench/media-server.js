#!/usr/bin/env node
'use strict';
/**
 * The DLNA MediaServer (`node bench/media-server.js`; dist/ built): the hub's real DLNA HTTP
 * server with the library device over a 10,000-track library (500 artists, 1,000 albums),
 * its res URLs made by the hub's real media server, on loopback, one keep-alive connection.
 *  1. Browse of "All tracks", 100 items a page, every page (p50/p95 per page; goal p95 < 50 ms),
 *     against a bare HTTP round trip on the same server (GET /icon.png: baseline, same run);
 *  2. Browse of an artist's and an album's tracks, and a Search (dc:title contains, a scan of
 *     every track), 100 a page;
 *  3. the first Browse after a rescan (the tree is rebuilt).
 * Exit code 0 whatever the figures say; 1 if the bench itself failed.
 */
const http = require('node:http');
const { join } = require('node:path');

const DIST = join(__dirname, '..', 'dist');
const { DlnaHttpServer } = require(join(DIST, 'dlna/http-server'));
const { LibraryDevice } = require(join(DIST, 'dlna/library-device'));
const { Gena } = require(join(DIST, 'protocols/upnp/gena-publisher'));
const { MediaServer } = require(join(DIST, 'media/media-server'));
const { createLogger } = require(join(DIST, 'logger'));

const TRACKS = Number(process.env.BENCH_MS_TRACKS || 10_000);
const ROUNDS = Number(process.env.BENCH_MS_ROUNDS || 3);
const CDS = 'urn:schemas-upnp-org:service:ContentDirectory:1';
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : NaN;
};
const fmt = (x) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');

function catalogOf(n) {
  let items = [];
  let version = 1;
  const byId = new Map();
  const fill = () => {
    items = Array.from({ length: n }, (_, i) => ({
      persistentId: String(1_000_000_000_000 + i),
      title: `Track ${i} & "friends" <live>`,
      artist: `Artist ${i % 500}`,
      album: `Album ${i % 1000}`,
      duration: 180 + (i % 120),
      file: `/music/artist-${i % 500}/album-${i % 1000}/track-${i}.mp3`,
      contentType: i % 4 ? 'audio/mpeg' : 'audio/flac',
      track: 1 + (i % 10),
      ...(i % 3 ? {} : { artwork: 'image/jpeg' }),
    }));
    byId.clear();
    for (const i of items) byId.set(i.persistentId, i);
  };
  fill();
  return {
    list: () => [...items],
    get: (id) => byId.get(id),
    rescan: async () => {
      fill();
      version++;
    },
    get version() {
      return version;
    },
  };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
function request(port, method, path, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method, path, agent, headers: body ? { ...headers, 'Content-Length': Buffer.byteLength(body) } : headers },
      (res) => {
        const parts = [];
        res.on('data', (c) => parts.push(c));
        res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(parts).toString('utf8') }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function soapBody(action, args) {
  const inner = Object.entries(args)
    .map(([k, v]) => `<${k}>${String(v).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;')}</${k}>`)
    .join('');
  return `<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><u:${action} xmlns:u="${CDS}">${inner}</u:${action}></s:Body></s:Envelope>`;
}

async function timed(fn) {
  const t0 = process.hrtime.bigint();
  const r = await fn();
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, r };
}

async function main() {
  const log = createLogger({ level: 'silent' });
  const catalog = catalogOf(TRACKS);
  const media = new MediaServer({ host: '127.0.0.1', logger: log });
  media.serveCatalog(catalog);
  await media.start();
  const library = { catalog, itemUrl: (i) => media.itemUrl(i), isItemUrl: (u) => media.isItemUrl(u), artwork: async () => undefined };
  const gena = new Gena({ maxPerService: 16, maxTotal: 64, maxSeconds: 1800 }, log, '127.0.0.1', 'bench');
  let device;
  const routes = {
    description: () => device.description(),
    scpd: () => undefined,
    icon: () => Buffer.alloc(200),
    control: async (slug, service, body, action) => device.control(service, body, action),
    event: () => undefined,
  };
  const server = new DlnaHttpServer(routes, 'bench', log);
  const { port } = await server.listen('127.0.0.1', 0);
  device = new LibraryDevice(library, 'bench-uuid', 'bench', `http://127.0.0.1:${port}`, gena, log, 'Bench library');
  const browse = (ObjectID, StartingIndex, RequestedCount = 100) =>
    request(
      port,
      'POST',
      '/r/library/ContentDirectory/control',
      soapBody('Browse', { ObjectID, BrowseFlag: 'BrowseDirectChildren', Filter: '*', StartingIndex, RequestedCount, SortCriteria: '' }),
      { SOAPACTION: `"${CDS}#Browse"`, 'Content-Type': 'text/xml; charset="utf-8"' },
    );
  const search = (SearchCriteria, StartingIndex) =>
    request(
      port,
      'POST',
      '/r/library/ContentDirectory/control',
      soapBody('Search', { ContainerID: '0', SearchCriteria, Filter: '*', StartingIndex, RequestedCount: 100, SortCriteria: '' }),
      { SOAPACTION: `"${CDS}#Search"`, 'Content-Type': 'text/xml; charset="utf-8"' },
    );

  try {
    // The first Browse builds the tree; measured apart (3.), then the pages.
    const first = await timed(() => browse('tracks', 0));
    if (first.r.status !== 200 || !first.r.body.includes('NumberReturned>100<'))
      throw new Error(`Browse failed: ${first.r.status} ${first.r.body.slice(0, 300)}`);
    for (let i = 0; i < 50; i++) await request(port, 'GET', '/icon.png'); // warm-up
    const pages = [];
    const bare = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (let start = 0; start < TRACKS; start += 100) {
        const page = await timed(() => browse('tracks', start));
        // 503: the server's per-address action limit (http-server.ts), which would measure nothing.
        if (page.r.status !== 200) throw new Error(`Browse at ${start}: HTTP ${page.r.status}`);
        pages.push(page.ms);
        bare.push((await timed(() => request(port, 'GET', '/icon.png'))).ms);
      }
    }
    const groups = [];
    for (let i = 0; i < 100; i++) {
      groups.push((await timed(() => browse(`artists/${keyOf(`Artist ${i}`)}`, 0))).ms);
      groups.push((await timed(() => browse(`albums/${keyOf(`Album ${i}`)}`, 0))).ms);
    }
    const searches = [];
    for (let i = 0; i < 30; i++) {
      const s = await timed(() => search(`upnp:class derivedfrom "object.item.audioItem" and dc:title contains "track ${i}"`, 0));
      if (s.r.status !== 200) throw new Error(`Search failed: ${s.r.body.slice(0, 300)}`);
      searches.push(s.ms);
    }
    const rebuilds = [];
    for (let i = 0; i < 5; i++) {
      await catalog.rescan();
      rebuilds.push((await timed(() => browse('tracks', 0))).ms);
    }
    const p95 = pct(pages, 95);
    console.log(`\nDLNA MediaServer (${TRACKS} tracks, loopback, one keep-alive connection, ${ROUNDS} rounds)`);
    console.log(
      `  Browse "All tracks", 100 a page:      p50 ${fmt(pct(pages, 50))} ms  p95 ${fmt(p95)} ms  (goal p95 < 50 ms; ${pages.length} pages)`,
    );
    console.log(`  bare HTTP round trip (baseline):      p50 ${fmt(pct(bare, 50))} ms  p95 ${fmt(pct(bare, 95))} ms`);
    console.log(`  ratio page / bare round trip:         p50 ${fmt(pct(pages, 50) / pct(bare, 50))}×  p95 ${fmt(p95 / pct(bare, 95))}×`);
    console.log(`  Browse an artist's / album's tracks:  p50 ${fmt(pct(groups, 50))} ms  p95 ${fmt(pct(groups, 95))} ms`);
    console.log(`  Search (class and title, all tracks): p50 ${fmt(pct(searches, 50))} ms  p95 ${fmt(pct(searches, 95))} ms`);
    console.log(
      `  first Browse after a rescan (tree):   p50 ${fmt(pct(rebuilds, 50))} ms  max ${fmt(Math.max(...rebuilds))} ms  (first of all: ${fmt(first.ms)} ms)`,
    );
    console.log(`  goal: ${p95 < 50 ? 'met' : 'NOT met'}`);
  } finally {
    agent.destroy();
    device?.close();
    gena.close();
    await server.close();
    await media.stop();
  }
  return 0;
}

/** The tree's key of a name (library-tree.ts: the first 12 hex digits of its SHA-1, lower case). */
function keyOf(name) {
  return require('node:crypto').createHash('sha1').update(name.toLowerCase()).digest('hex').slice(0, 12);
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
