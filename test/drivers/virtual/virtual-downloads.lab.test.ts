/**
 * Virtual speakers' downloads (issue 7, item 6): streamed and counted, only the head kept, one
 * download shared by every virtual speaker of a play, and checked to be audio.
 */
import { startHub, type TestHub, virtualOf } from '../../helpers/hub';
import { bigFileServer, measureDownloadRss, type BigFileServer } from './rss';
import { eventually } from '../../helpers/wait';

const MiB = 1024 * 1024;
const BIG = 300 * MiB;
type Web = BigFileServer;
const webServer = () => bigFileServer(BIG);

describe('virtual speaker downloads', () => {
  let web: Web;
  beforeAll(async () => {
    web = await webServer();
  });
  afterAll(async () => {
    await web?.close();
  });

  test('a 300 MiB file in party mode: one download, RSS grows < 100 MiB, every speaker plays with the duration from the header', async () => {
    const r = await measureDownloadRss({ fileBytes: BIG });
    if (process.env.SPEAKERHUB_REPORT) console.log(`RSS growth for a ${BIG / MiB} MiB party play: ${(r.growthBytes / MiB).toFixed(1)} MiB`);
    expect(r.requests).toBe(1);
    expect(r.fetches).toHaveLength(3);
    for (const f of r.fetches) expect(f).toMatchObject({ bytes: BIG, live: false, duration: (BIG - 44) / 16000 });
    expect(r.playing).toEqual([true, true, true]);
    // The numbers in the failure message say by how much.
    expect({ growthMiB: Math.round(r.growthBytes / MiB), ok: r.growthBytes < 100 * MiB }).toMatchObject({ ok: true });
  }, 180_000);

  describe('in process', () => {
    let t: TestHub;
    beforeAll(async () => {
      t = await startHub({ speakers: { virtual: { count: 2 } } });
    });
    afterAll(async () => {
      await t?.close();
    });

    test('a URL that answers 200 with an HTML page is not audio: PlaybackFailed, the cause in the debug log', async () => {
      const r = await t.op('play_web_media_party_mode', { MediaUrl: web.url('/page.mp3') });
      expect(r).toMatchObject({ Result: 'false', ErrorCode: 'PlaybackFailed' });
      expect(r.ErrorMessage).toContain('does not serve audio');
      const causes = t.logs
        .map((l) => JSON.parse(l))
        .filter((l) => l.msg === 'media fetch failed')
        .map((l) => l.cause);
      expect(causes).toContain('not audio: content type text/html, no known audio signature');
      expect(web.hits.get('/page.mp3')).toBe(1);
    });

    test('stopping a play lets go of its download: the big file is not read to its end', async () => {
      const path = '/stopped.wav';
      expect(await t.op('play_web_media_party_mode', { MediaUrl: web.url(path) })).toEqual({ Result: 'true' });
      const downloads = virtualOf(t.hub).downloads;
      expect(downloads.size).toBe(1);
      expect(await t.op('stop_play')).toEqual({ Result: 'true' });
      // Positive signal: the shared download is gone once both speakers let go.
      await eventually(() => downloads.size === 0, 10_000, 'the download released');
      expect(web.hits.get(path)).toBe(1);
    });
  });
});

describe('webMedia.refuseLocalAddresses', () => {
  let t: TestHub;
  let web: Web;
  beforeAll(async () => {
    web = await webServer();
    t = await startHub({ speakers: { virtual: { count: 2 } }, webMedia: { refuseLocalAddresses: true } });
  });
  afterAll(async () => {
    await t?.close();
    await web?.close();
  });

  test('loopback and link-local MediaUrls are refused with MediaUrlRefused (HTTP 400), before anything is fetched', async () => {
    const port = new URL(web.url('/')).port;
    for (const url of [
      web.url('/a.wav'),
      `http://localhost:${port}/a.wav`,
      `http://[::1]:${port}/a.wav`,
      'http://169.254.169.254/latest/meta-data',
      'http://127.1.2.3:1/x.mp3',
    ]) {
      const res = await t.get(`/api/v1/play_web_media_party_mode?${new URLSearchParams({ SessionToken: t.session, MediaUrl: url })}`);
      expect({ url, status: res.status, body: res.body }).toMatchObject({
        url,
        status: 400,
        body: { Result: 'false', ErrorCode: 'MediaUrlRefused', Parameter: 'MediaUrl' },
      });
    }
    expect(web.hits.size).toBe(0);
  });

  test('hub media (served on loopback by the hub itself) still plays', async () => {
    const [media] = (await t.op('media_list')).MediaList;
    expect(await t.op('play_hub_media_party_mode', { PersistentID: media.PersistentID })).toEqual({ Result: 'true' });
    await t.op('stop_play');
  });
});

describe('what counts as a local address', () => {
  const { isLocalAddress, pointsAtLocalAddress } = require('../../../src/net/local-address') as typeof import('../../../src/net/local-address');

  test('loopback and link-local, v4, v6 and v4-mapped; LAN and public addresses are not', () => {
    for (const a of ['127.0.0.1', '127.255.1.2', '0.0.0.0', '169.254.169.254', '::1', '::', 'fe80::1', 'FEBF::2', '::ffff:127.0.0.1', '[::1]'])
      expect({ a, local: isLocalAddress(a) }).toEqual({ a, local: true });
    for (const a of ['10.0.0.1', '192.168.1.20', '172.16.0.1', '8.8.8.8', 'fd00::1', '2001:db8::1', '::ffff:10.0.0.1', 'example.com'])
      expect({ a, local: isLocalAddress(a) }).toEqual({ a, local: false });
  });

  test('URLs: literal hosts and localhost names (no DNS query needed for these)', async () => {
    expect(await pointsAtLocalAddress('http://localhost:8000/x.mp3')).toBe(true);
    expect(await pointsAtLocalAddress('http://radio.localhost/x.mp3')).toBe(true);
    expect(await pointsAtLocalAddress('http://[::1]:8000/x.mp3')).toBe(true);
    expect(await pointsAtLocalAddress('http://10.1.2.3/x.mp3')).toBe(false);
    expect(await pointsAtLocalAddress('not a url')).toBe(false);
  });
});

describe('secrets in media URLs stay out of the log', () => {
  let t: TestHub;
  beforeAll(async () => {
    t = await startHub({ speakers: { virtual: { count: 1 } } });
  });
  afterAll(async () => {
    await t?.close();
  });

  test('a MediaUrl with user:pass@ and a token query that fails: neither the answer nor the log holds them', async () => {
    const r = await t.op('play_web_media_party_mode', { MediaUrl: 'http://alice:s3cr3tpw@127.0.0.1:1/x.mp3?token=t0k3nv4lue' });
    expect(r).toMatchObject({ Result: 'false', ErrorCode: 'PlaybackFailed' });
    const causes = t.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'media fetch failed');
    expect(causes).toHaveLength(1);
    for (const text of [JSON.stringify(r), ...t.logs]) {
      expect(text).not.toContain('s3cr3tpw');
      expect(text).not.toContain('t0k3nv4lue');
    }
  });
});

describe('durations of files longer than the kept head', () => {
  const { execFileSync } = require('node:child_process') as typeof import('node:child_process');
  const { mkdtempSync, readFileSync, rmSync, statSync } = require('node:fs') as typeof import('node:fs');
  const { tmpdir } = require('node:os') as typeof import('node:os');
  const { join } = require('node:path') as typeof import('node:path');
  const { createServer } = require('node:http') as typeof import('node:http');
  let t: TestHub;
  let dir: string;
  let server: import('node:http').Server;
  let base: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'speakerhub-mp3-'));
    // 6 minutes at 64 kbit/s: ~2.9 MiB, more than the 2 MiB head. One without a Xing header
    // (the duration must come from the bitrate and the length), one with it.
    for (const [name, xing] of [
      ['plain.mp3', '0'],
      ['xing.mp3', '1'],
    ]) {
      execFileSync('ffmpeg', [
        '-loglevel',
        'error',
        '-y',
        '-f',
        'lavfi',
        '-i',
        'sine=frequency=440:duration=360',
        '-ac',
        '1',
        '-ar',
        '22050',
        '-b:a',
        '64k',
        '-write_xing',
        xing,
        join(dir, name),
      ]);
    }
    server = createServer((req, res) => {
      const file = join(dir, (req.url ?? '/').slice(1));
      res.writeHead(200, { 'Content-Type': 'audio/mpeg', 'Content-Length': statSync(file).size }).end(readFileSync(file));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as import('node:net').AddressInfo).port}`;
    t = await startHub({ speakers: { virtual: { count: 1 } } });
  });
  afterAll(async () => {
    await t?.close();
    await new Promise((r) => server?.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  test.each(['plain.mp3', 'xing.mp3'])('%s: the speaker knows the 6-minute duration from the head', async (name) => {
    expect(statSync(join(dir, name)).size).toBeGreaterThan(2 * MiB);
    expect(await t.op('play_web_media_party_mode', { MediaUrl: `${base}/${name}` })).toEqual({ Result: 'true' });
    const f = virtualOf(t.hub).speaker(0).fetches.at(-1)!;
    expect(f.duration).toBeGreaterThan(355);
    expect(f.duration).toBeLessThan(365);
    await t.op('stop_play');
  });
});
