import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { encodeWav } from '../../src/audio/wav';
import { attr, child, children, parseXml, text, type XmlValue } from '../../src/protocols/upnp/xml';
import { LAB_NETWORKS } from '../helpers/lab-networks';
import { JsonLines } from '../drivers/upnp/processes';
import { DlnaLab, http, labUnavailableReason, REPO, type LabHub } from './lab';
import { eventually } from '../helpers/wait';
import { sine } from '../helpers/audio';

/**
 * The hub's library as a UPnP AV MediaServer (issue 28), against control points no one here
 * wrote: GUPnP 1.6 discovers it, browses the root, artists and albums page by page, searches,
 * and plays a browsed track's res URL to one of the hub's own renderers — proven by hub A's
 * virtual speaker fetching that very URL from the hub's media server. GSSDP (what
 * gssdp-discover is built on) sees the MediaServer:1 device type.
 */

const reason = labUnavailableReason();
const SKIP = !!reason && process.env.SPEAKERHUB_SKIP_LABS === '1';
const d = SKIP ? describe.skip : describe;
jest.setTimeout(120_000);

const PY = '/usr/bin/python3';
const MEDIA_SERVER = 'urn:schemas-upnp-org:device:MediaServer:1';
const ODD_TITLE = 'Rock & Roll <Live> "Best"';

type Page = { Result: string; NumberReturned: number; TotalMatches: number; UpdateID: number };
type CpLine = {
  evt: string;
  id?: number;
  ok?: boolean;
  value?: any;
  error?: string;
  code?: number;
  udn?: string;
  name?: string;
  type?: string;
  location?: string;
};

const tone = (seconds: number, hz: number) => sine(seconds, hz, 8000, 8000);

/** Tracks beside the lab's own: two bands, three albums, a title that needs escaping, and an MP3 with a cover. */
function addLibrary(dir: string): void {
  for (let i = 1; i <= 8; i++) {
    const tags = { title: `Song ${i}`, artist: i % 2 ? 'Band A' : 'Band B', album: `Album ${i % 3}` };
    writeFileSync(join(dir, `song-${i}.wav`), encodeWav(tone(4, 300 + 20 * i), 8000, tags));
  }
  writeFileSync(join(dir, 'odd.wav'), encodeWav(tone(2, 700), 8000, { title: ODD_TITLE, artist: 'Band A', album: 'Album & Co' }));
  const cover = join(dir, '..', 'cover.jpg');
  execFileSync('ffmpeg', ['-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'color=c=red:s=64x64', '-frames:v', '1', cover]);
  // ffmpeg's lavfi source and its mp3 muxer's attached picture: an ID3v2 APIC frame, as taggers write.
  execFileSync('ffmpeg', [
    ...['-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'sine=frequency=500:duration=5', '-i', cover],
    ...['-map', '0:a', '-map', '1:v', '-c:a', 'libmp3lame', '-b:a', '64k', '-c:v', 'copy', '-id3v2_version', '3', '-disposition:v', 'attached_pic'],
    ...['-metadata', 'title=Covered Song', '-metadata', 'artist=Picture Band', '-metadata', 'album=Pictures'],
    join(dir, 'covered.mp3'),
  ]);
}

const objects = (result: string, kind: 'item' | 'container'): XmlValue[] => children(child(parseXml(result), 'DIDL-Lite'), kind);
const titles = (result: string, kind: 'item' | 'container') => objects(result, kind).map((o) => text(child(o, 'title')));

d('DLNA MediaServer', () => {
  let lab: DlnaLab;
  let hub: LabHub;
  let cp: JsonLines<CpLine>;
  let next = 1;
  let hubAddress: string;

  const call = async (cmd: string, args: Record<string, unknown>): Promise<any> => {
    const id = next++;
    cp.child.stdin!.write(`${JSON.stringify({ id, cmd, ...args })}\n`);
    const r = await cp.waitFor((e) => e.evt === 'result' && e.id === id, 20000, `${cmd} to answer`);
    if (!r.ok) throw Object.assign(new Error(`${cmd}: ${r.error}`), { upnpCode: r.code });
    return r.value;
  };
  const browse = (object: string, start = 0, count = 0, flag = 'BrowseDirectChildren'): Promise<Page> =>
    call('browse', { udn: hub.mediaServer!.udn, object, start, count, flag });
  const search = (criteria: string, container = '0', count = 0): Promise<Page> =>
    call('search', { udn: hub.mediaServer!.udn, criteria, container, count });
  /** Every child of a container, fetched `pageSize` at a time as a paging control point does. */
  const browseAll = async (object: string, pageSize: number) => {
    const pages: Page[] = [];
    for (let start = 0; ; start += pageSize) {
      const p = await browse(object, start, pageSize);
      pages.push(p);
      if (start + p.NumberReturned >= p.TotalMatches || p.NumberReturned === 0) break;
    }
    return pages;
  };

  beforeAll(async () => {
    if (reason) throw new Error(`the DLNA lab cannot run: ${reason} (SPEAKERHUB_SKIP_LABS=1 skips it)`);
    execFileSync(PY, ['-c', "import gi; gi.require_version('GUPnP', '1.6'); gi.require_version('GSSDP', '1.6')"], { stdio: 'ignore' });
    lab = await DlnaLab.start([], LAB_NETWORKS.dlnaMediaServer);
    addLibrary(join(lab.tmp, 'web'));
    hub = await lab.startHubA(['Kitchen']);
    hubAddress = lab.lan.host('hub').address;
    cp = new JsonLines(lab.lan.spawn('cp', PY, [join(REPO, 'test/dlna/cp-gupnp-dms.py'), 'lan0'], { stdio: ['pipe', 'pipe', 'pipe'] }));
    await cp.waitFor((e) => e.evt === 'ready', 10000, 'the GUPnP control point');
  });

  afterAll(async () => {
    cp?.child.kill();
    await lab?.stop();
  });

  test('GSSDP sees the MediaServer:1 device type at the hub', async () => {
    expect(hub.mediaServer?.name).toMatch(/^SpeakerHub library \(.+\)$/);
    const g = new JsonLines<{ evt: string; usn?: string; locations?: string[] }>(
      lab.lan.spawn('cp', PY, [join(REPO, 'test/dlna/gssdp-browse.py'), 'lan0', MEDIA_SERVER]),
    );
    try {
      const seen = await g.waitFor((e) => e.evt === 'available', 15000, 'GSSDP finding a MediaServer:1');
      expect(seen.usn).toBe(`${hub.mediaServer!.udn}::${MEDIA_SERVER}`);
      expect(seen.locations).toContain(hub.mediaServer!.location);
    } finally {
      g.child.kill();
    }
  });

  test('GUPnP discovers it and browses the root: All tracks, Artists, Albums', async () => {
    const server = await cp.waitFor((e) => e.evt === 'server', 20000, 'GUPnP finding the MediaServer');
    expect([server.udn, server.name, server.type]).toEqual([hub.mediaServer!.udn, hub.mediaServer!.name, MEDIA_SERVER]);
    const root = await browse('0');
    expect(titles(root.Result, 'container')).toEqual(['All tracks', 'Artists', 'Albums']);
    const meta = await browse('0', 0, 0, 'BrowseMetadata');
    expect(attr(objects(meta.Result, 'container')[0], 'id')).toBe('0');
  });

  test('pages the artists one at a time, then an artist’s tracks two at a time; titles are escaped correctly', async () => {
    const pages = await browseAll('artists', 1);
    const artists = pages.flatMap((p) => objects(p.Result, 'container'));
    expect(pages.every((p) => p.NumberReturned === 1)).toBe(true);
    expect(artists.map((a) => text(child(a, 'title')))).toEqual(expect.arrayContaining(['Band A', 'Band B', 'Picture Band', 'SpeakerHub Tests']));
    const bandA = artists.find((a) => text(child(a, 'title')) === 'Band A')!;
    const tracks = (await browseAll(attr(bandA, 'id')!, 2)).flatMap((p) => objects(p.Result, 'item'));
    expect(tracks.map((t) => text(child(t, 'title'))).sort()).toEqual([ODD_TITLE, 'Song 1', 'Song 3', 'Song 5', 'Song 7'].sort());
    const odd = tracks.find((t) => text(child(t, 'title')) === ODD_TITLE)!;
    expect(text(child(odd, 'album'))).toBe('Album & Co');
    expect(text(child(odd, 'class'))).toBe('object.item.audioItem.musicTrack');
    expect(attr(child(odd, 'res'), 'protocolInfo')).toMatch(/^http-get:\*:audio\/wav:/);
    expect(attr(child(odd, 'res'), 'duration')).toBe('0:00:02.000');
  });

  test('albums hold their tracks; a track with an embedded cover has an albumArtURI the hub serves', async () => {
    const albums = (await browseAll('albums', 3)).flatMap((p) => objects(p.Result, 'container'));
    expect(albums.map((a) => text(child(a, 'title')))).toEqual(expect.arrayContaining(['Album 0', 'Album 1', 'Album 2', 'Album & Co', 'Pictures']));
    const pictures = albums.find((a) => text(child(a, 'title')) === 'Pictures')!;
    const [covered] = objects((await browse(attr(pictures, 'id')!)).Result, 'item');
    expect(text(child(covered, 'title'))).toBe('Covered Song');
    const art = text(child(covered, 'albumArtURI'));
    expect(art).toMatch(/^http:\/\/.+\/r\/library\/art\/\d+$/);
    const got = await http('GET', art);
    expect(got.status).toBe(200);
    expect(got.headers['content-type']).toBe('image/jpeg');
    // The album container shows the same cover.
    expect(text(child(pictures, 'albumArtURI'))).toBe(art);
    // The res is the hub's media server; a forged tag reaches nothing.
    const res = text(child(covered, 'res'));
    expect((await http('HEAD', res)).headers['content-type']).toBe('audio/mpeg');
    expect((await http('GET', res.replace(/\/library\/(\d+)\/[^/]+\//, '/library/$1/AAAAAAAAAAAAAAAAAAAAAA/'))).status).toBe(404);
  });

  test('searches by class, title, artist and album; criteria it does not understand are UPnP error 708', async () => {
    const audio = await search('upnp:class derivedfrom "object.item.audioItem"');
    const all = await browse('tracks', 0, 1);
    expect(audio.TotalMatches).toBe(all.TotalMatches);
    const songs = await search('upnp:class derivedfrom "object.item.audioItem" and dc:title contains "song"', '0', 3);
    // Song 1–8, Covered Song, and the lab’s untagged song.mp3 (titled by its file name).
    expect([songs.NumberReturned, songs.TotalMatches]).toEqual([3, 10]);
    const either = await search('upnp:artist contains "picture" or upnp:album contains "& co"');
    expect(titles(either.Result, 'item').sort()).toEqual(['Covered Song', ODD_TITLE]);
    await expect(search('dc:date > "2001-01-01"')).rejects.toMatchObject({ upnpCode: 708 });
    await expect(browse('albums/nothing-here')).rejects.toMatchObject({ upnpCode: 701 });
  });

  test("plays a browsed track to the hub's own renderer: the virtual speaker fetches that track from the hub's media server", async () => {
    await cp.waitFor((e) => e.evt === 'renderer' && e.name === 'Kitchen', 20000, 'GUPnP finding the Kitchen renderer');
    const kitchen = hub.renderer('Kitchen');
    const found = await search('dc:title = "Song 3"');
    const [song] = objects(found.Result, 'item');
    const res = text(child(song, 'res'));
    const path = new URL(res).pathname;
    const mark = hub.mark;
    await call('play', { udn: kitchen.udn, url: res, meta: found.Result });
    await hub.lines.waitFor(
      (e) => e.evt === 'media' && e.method === 'GET' && e.path === path && e.from === hubAddress,
      15000,
      'the virtual speaker fetching the track',
      mark,
    );
    await hub.op('stop_play');
  });

  test('GENA: a subscriber gets the SystemUpdateID, and a higher one when the library changes', async () => {
    const root = `${LAB_NETWORKS.dlnaMediaServer.subnet}.1`;
    const notifies: number[] = [];
    const cb = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        const id = /<SystemUpdateID>(\d+)<\/SystemUpdateID>/.exec(Buffer.concat(parts).toString('utf8'))?.[1];
        if (id) notifies.push(Number(id));
        res.end();
      });
    });
    await new Promise<void>((r) => cb.listen(0, root, r));
    try {
      const ev = hub.mediaServer!.location.replace(/description\.xml$/, 'ContentDirectory/event');
      const port = (cb.address() as AddressInfo).port;
      const sub = await http('SUBSCRIBE', ev, { CALLBACK: `<http://${root}:${port}/cb>`, NT: 'upnp:event', TIMEOUT: 'Second-300' });
      expect(sub.status).toBe(200);
      await eventually(() => notifies.length > 0, 10000, 'the initial SystemUpdateID');
      const before = notifies[0];
      writeFileSync(join(lab.tmp, 'web', 'late.wav'), encodeWav(tone(1, 440), 8000, { title: 'Late Song', artist: 'Band C', album: 'Late' }));
      await hub.op('rescan_media');
      await eventually(() => notifies.some((n) => n > before), 10000, 'a higher SystemUpdateID after the rescan');
      const found = await search('dc:title = "Late Song"');
      expect(found.TotalMatches).toBe(1);
      expect(found.UpdateID).toBeGreaterThan(before);
    } finally {
      cb.close();
    }
  });

  test('dlna.mediaServer false: the hub publishes no MediaServer (its description is not found)', async () => {
    const other = await lab.startHubA(['Den'], { host: 'hubb', port: 8092, dlna: { mediaServer: false } });
    expect(other.mediaServer).toBeUndefined();
    const loc = new URL(other.renderer('Den').location);
    const desc = await http('GET', `${loc.origin}/r/library/description.xml`);
    expect(desc.status).toBe(404);
    await other.stop();
  });
});
