import { XMLValidator } from 'fast-xml-parser';
import { ContentDirectory, MAX_PAGE } from '../../src/dlna/content-directory';
import { Gena } from '../../src/protocols/upnp/gena-publisher';
import { LibraryDevice } from '../../src/dlna/library-device';
import { createLogger } from '../../src/logger';
import type { LibraryAccess, MediaItem } from '../../src/media/types';
import { DidlFilter, didlDocument, didlObject, formatDuration } from '../../src/protocols/upnp/didl';
import { matchesCriteria, parseSearchCriteria, SearchCriteriaError, MAX_CRITERIA_CHARS } from '../../src/protocols/upnp/search-criteria';
import { UpnpError } from '../../src/protocols/upnp/soap';
import { attr, child, children, parseXml, text } from '../../src/protocols/upnp/xml';

/** The MediaServer's pure parts, in process: search criteria, DIDL-Lite output, Browse/Search paging and hostile input. */

function item(n: number, over: Partial<MediaItem> = {}): MediaItem {
  return {
    persistentId: String(1000 + n),
    title: `Track ${n}`,
    artist: `Artist ${n % 3}`,
    album: `Album ${n % 5}`,
    duration: 60 + n,
    file: `/music/t${n}.mp3`,
    contentType: 'audio/mpeg',
    track: (n % 7) + 1,
    ...over,
  };
}

function libraryOf(items: MediaItem[]): LibraryAccess {
  const byId = new Map(items.map((i) => [i.persistentId, i]));
  return {
    catalog: { list: () => [...items], get: (id) => byId.get(id), rescan: async () => undefined, version: 3 },
    itemUrl: (i) => `http://10.0.0.2:9000/library/${i.persistentId}/x/${i.file.split('/').pop()}`,
    isItemUrl: () => false,
    artwork: async () => undefined,
  };
}

const didlItems = (result: string) => {
  const doc = parseXml(String(result));
  return children(child(doc, 'DIDL-Lite'), 'item');
};
const didlContainers = (result: string) => children(child(parseXml(String(result)), 'DIDL-Lite'), 'container');
const upnpCode = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    if (e instanceof UpnpError) return e.code;
    throw e;
  }
  return undefined;
};

describe('search criteria', () => {
  const track = {
    'upnp:class': 'object.item.audioItem.musicTrack',
    'dc:title': 'Blue Monday',
    'upnp:artist': 'New Order',
    'upnp:album': 'Substance',
  };
  const album = { 'upnp:class': 'object.container.album.musicAlbum', 'dc:title': 'Substance' };

  test('the forms control points send', () => {
    const m = (c: string, o: Record<string, string> = track) => matchesCriteria(parseSearchCriteria(c), o);
    expect(m('upnp:class derivedfrom "object.item.audioItem"')).toBe(true);
    expect(m('upnp:class derivedfrom "object.item.audioItem"', album)).toBe(false);
    expect(m('dc:title contains "monday"')).toBe(true);
    expect(m('upnp:artist contains "order" and upnp:album contains "sub"')).toBe(true);
    expect(m('upnp:artist contains "abba" or upnp:album contains "sub"')).toBe(true);
    expect(m('upnp:artist contains "abba" or upnp:album contains "x"')).toBe(false);
    // BubbleUPnP's and Kodi's shapes: parentheses, exists, = on the class.
    expect(m('(upnp:class derivedfrom "object.item.audioItem" and (dc:title contains "blue" or upnp:artist contains "blue"))')).toBe(true);
    expect(m('upnp:class = "object.container.album.musicAlbum" and dc:title contains "sub"', album)).toBe(true);
    expect(m('upnp:genre exists false and dc:title exists true')).toBe(true);
    expect(m('*')).toBe(true);
    // "and" binds tighter than "or".
    expect(m('dc:title contains "x" and upnp:artist contains "x" or upnp:album = "substance"')).toBe(true);
    expect(m('dc:title = "quote \\" inside"', { ...track, 'dc:title': 'quote " inside' })).toBe(true);
  });

  test.each([
    ['an unknown property', 'dc:date > "2001"'],
    ['an unknown operator', 'dc:title like "x"'],
    ['an unquoted value', 'dc:title contains blue'],
    ['an unterminated string', 'dc:title contains "blue'],
    ['a missing parenthesis', '(dc:title contains "blue"'],
    ['text after the criteria', 'dc:title contains "a" dc:title contains "b"'],
    ['a dangling and', 'dc:title contains "a" and'],
    ['too long', `dc:title contains "${'a'.repeat(MAX_CRITERIA_CHARS)}"`],
    ['too deep', `${'('.repeat(40)}dc:title contains "a"${')'.repeat(40)}`],
    ['too many terms', Array.from({ length: 100 }, () => 'dc:title contains "a"').join(' or ')],
  ])('refuses %s (708)', (_what, criteria) => {
    expect(() => parseSearchCriteria(criteria)).toThrow(SearchCriteriaError);
  });
});

describe('DIDL-Lite output', () => {
  test('escapes &, <, > and quotes in titles, artists, albums and URLs; the document is well formed', () => {
    const xml = didlDocument([
      didlObject({
        id: 'tracks/1',
        parentId: 'tracks',
        title: 'Rock & Roll <Live> "Best" \'of\'',
        upnpClass: 'object.item.audioItem.musicTrack',
        artist: 'A&B <c>',
        album: '"Q" & \'A\'',
        albumArtUri: 'http://h/art?a=1&b=2',
        res: { url: 'http://h/x?a=1&b="2"', protocolInfo: 'http-get:*:audio/mpeg:*', duration: 3725.5 },
      }),
    ]);
    expect(XMLValidator.validate(xml)).toBe(true);
    const it = child(child(parseXml(xml), 'DIDL-Lite'), 'item');
    expect(text(child(it, 'title'))).toBe('Rock & Roll <Live> "Best" \'of\'');
    expect(text(child(it, 'artist'))).toBe('A&B <c>');
    expect(text(child(it, 'album'))).toBe('"Q" & \'A\'');
    expect(text(child(it, 'res'))).toBe('http://h/x?a=1&b="2"');
    expect(attr(child(it, 'res'), 'duration')).toBe('1:02:05.500');
    expect(text(child(it, 'albumArtURI'))).toBe('http://h/art?a=1&b=2');
  });

  test('a Filter leaves out what it does not name; the title and class stay', () => {
    const o = { id: '1', parentId: '0', title: 'T', upnpClass: 'object.item', artist: 'A', res: { url: 'u', protocolInfo: 'p', duration: 5 } };
    const xml = didlObject(o, new DidlFilter('dc:title,res'));
    expect(xml).toContain('<res protocolInfo="p">u</res>');
    expect(xml).not.toContain('artist');
    expect(didlObject(o, new DidlFilter('*'))).toContain('duration="0:00:05.000"');
    expect(formatDuration(59.9996)).toBe('0:01:00.000');
  });
});

describe('ContentDirectory', () => {
  const items = Array.from({ length: 25 }, (_, n) => item(n));
  const cd = new ContentDirectory(libraryOf(items), (i) => `http://10.0.0.2:1/r/library/art/${i.persistentId}`);
  const browse = (ObjectID: string, BrowseFlag = 'BrowseDirectChildren', StartingIndex = '0', RequestedCount = '0', SortCriteria = '') =>
    cd.act('Browse', { ObjectID, BrowseFlag, Filter: '*', StartingIndex, RequestedCount, SortCriteria });

  test('the root holds All tracks, Artists and Albums', () => {
    const r = browse('0');
    expect(didlContainers(String(r.Result)).map((c) => text(child(c, 'title')))).toEqual(['All tracks', 'Artists', 'Albums']);
    expect(r.TotalMatches).toBe(3);
    expect(r.UpdateID).toBe(3);
    const meta = browse('0', 'BrowseMetadata');
    expect(attr(didlContainers(String(meta.Result))[0], 'parentID')).toBe('-1');
  });

  test('pages All tracks with StartingIndex and RequestedCount; tracks carry artist, album, duration and a res with the mime type', () => {
    const first = browse('tracks', 'BrowseDirectChildren', '0', '10');
    const last = browse('tracks', 'BrowseDirectChildren', '20', '10');
    expect([first.NumberReturned, first.TotalMatches, last.NumberReturned]).toEqual([10, 25, 5]);
    const t = didlItems(String(first.Result))[0];
    expect(text(child(t, 'class'))).toBe('object.item.audioItem.musicTrack');
    expect(text(child(t, 'artist'))).toMatch(/^Artist \d$/);
    expect(attr(child(t, 'res'), 'protocolInfo')).toMatch(/^http-get:\*:audio\/mpeg:/);
    expect(text(child(t, 'res'))).toMatch(/^http:\/\/10\.0\.0\.2:9000\/library\/\d+\//);
  });

  test('artists and albums lead to their tracks; an album is in track order', () => {
    const artists = didlContainers(String(browse('artists').Result));
    expect(artists.map((a) => text(child(a, 'title')))).toEqual(['Artist 0', 'Artist 1', 'Artist 2']);
    const tracks = didlItems(String(browse(attr(artists[1], 'id')!).Result));
    expect(tracks.every((t) => text(child(t, 'artist')) === 'Artist 1')).toBe(true);
    const albums = didlContainers(String(browse('albums').Result));
    expect(albums).toHaveLength(5);
    const albumTracks = didlItems(String(browse(attr(albums[0], 'id')!).Result));
    const numbers = albumTracks.map((t) => Number(text(child(t, 'originalTrackNumber'))));
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
    // BrowseMetadata of an ID a control point kept finds the object again.
    const one = browse(attr(albumTracks[0], 'id')!, 'BrowseMetadata');
    expect(text(child(didlItems(String(one.Result))[0], 'title'))).toBe(text(child(albumTracks[0], 'title')));
  });

  test('sorts by what GetSortCapabilities names; anything else is 709', () => {
    const r = browse('tracks', 'BrowseDirectChildren', '0', '3', '-dc:title');
    expect(didlItems(String(r.Result)).map((t) => text(child(t, 'title')))).toEqual(['Track 24', 'Track 23', 'Track 22']);
    expect(upnpCode(() => browse('tracks', 'BrowseDirectChildren', '0', '3', '+dc:date'))).toBe(709);
    // What Home Assistant's dlna_dms sends everywhere: "All tracks" goes album by album, each in track order.
    const ha = didlItems(String(browse('tracks', 'BrowseDirectChildren', '0', '0', '+upnp:class,+upnp:originalTrackNumber,+dc:title').Result));
    const order = ha.map((t) => [text(child(t, 'album')), Number(text(child(t, 'originalTrackNumber')))] as const);
    expect(order).toEqual([...order].sort((x, y) => x[0].localeCompare(y[0]) || x[1] - y[1]));
  });

  test('Search finds tracks by title, artist and album, pages them, and refuses criteria it does not understand with 708', () => {
    const search = (SearchCriteria: string, ContainerID = '0', RequestedCount = '0') =>
      cd.act('Search', { ContainerID, SearchCriteria, Filter: '*', StartingIndex: '0', RequestedCount, SortCriteria: '' });
    const all = search('upnp:class derivedfrom "object.item.audioItem"');
    expect(all.TotalMatches).toBe(25);
    expect(search('dc:title contains "track 1"').TotalMatches).toBe(11);
    expect(
      search('upnp:class derivedfrom "object.item.audioItem" and (upnp:artist contains "artist 2" or upnp:album contains "album 4")').TotalMatches,
    ).toBe(items.filter((i) => i.artist === 'Artist 2' || i.album === 'Album 4').length);
    expect(search('upnp:class = "object.container.album.musicAlbum"').TotalMatches).toBe(5);
    expect(search('upnp:class derivedfrom "object.item"', 'tracks', '7').NumberReturned).toBe(7);
    expect(upnpCode(() => search('dc:date > "2001"'))).toBe(708);
    // Home Assistant's dlna_dms path resolution: one child of a container by its title.
    const album = search('@parentID="albums" and dc:title="album 3"', 'albums', '1');
    expect([album.TotalMatches, attr(didlContainers(String(album.Result))[0], 'id')]).toEqual([1, expect.stringMatching(/^albums\//)]);
    expect(upnpCode(() => search('*', 'nowhere'))).toBe(701);
    expect(upnpCode(() => search('*', `tracks/${items[0].persistentId}`))).toBe(710);
  });

  test('hostile input: a huge RequestedCount is capped, an unknown ObjectID is 701, bad numbers and flags are 402', () => {
    const many = new ContentDirectory(libraryOf(Array.from({ length: MAX_PAGE + 100 }, (_, n) => item(n))), () => '');
    const r = many.act('Browse', {
      ObjectID: 'tracks',
      BrowseFlag: 'BrowseDirectChildren',
      Filter: '*',
      StartingIndex: '0',
      RequestedCount: '4294967295',
      SortCriteria: '',
    });
    expect([r.NumberReturned, r.TotalMatches]).toEqual([MAX_PAGE, MAX_PAGE + 100]);
    expect(upnpCode(() => browse('tracks/999999'))).toBe(701);
    expect(upnpCode(() => browse('artists/zzz', 'BrowseMetadata'))).toBe(701);
    expect(upnpCode(() => browse('x'.repeat(10_000)))).toBe(402);
    expect(upnpCode(() => browse('tracks', 'BrowseDirectChildren', '-1'))).toBe(402);
    expect(upnpCode(() => browse('tracks', 'BrowseDirectChildren', '0', '99999999999'))).toBe(402);
    expect(upnpCode(() => browse('tracks', 'BrowseEverything'))).toBe(402);
    // Past the end: an empty page, not an error.
    expect(browse('tracks', 'BrowseDirectChildren', '1000', '10').NumberReturned).toBe(0);
  });
});

describe('the MediaServer device over SOAP', () => {
  const log = createLogger({ level: 'silent' });
  const CDS = 'urn:schemas-upnp-org:service:ContentDirectory:1';
  const envelope = (inner: string) =>
    `<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body>${inner}</s:Body></s:Envelope>`;
  let gena: Gena;
  let device: LibraryDevice;
  beforeAll(() => {
    gena = new Gena({ maxPerService: 4, maxTotal: 8, maxSeconds: 600 }, log, '127.0.0.1', 'test');
    device = new LibraryDevice(libraryOf([item(1, { title: 'A & <B>' })]), 'hub-uuid', '1.0', 'http://10.0.0.2:5000', gena, log, 'My library');
  });
  afterAll(() => {
    device.close();
    gena.close();
  });
  const faultCode = (body: string) => /<errorCode>(\d+)<\/errorCode>/.exec(body)?.[1];

  test('describes a MediaServer:1 with a ContentDirectory and a ConnectionManager', () => {
    const d = device.description();
    expect(d).toContain('<deviceType>urn:schemas-upnp-org:device:MediaServer:1</deviceType>');
    expect(d).toContain('<friendlyName>My library</friendlyName>');
    expect(d).toContain(CDS);
    expect(XMLValidator.validate(LibraryDevice.scpd())).toBe(true);
  });

  test('answers Browse with an escaped DIDL-Lite Result, and faults with UPnP codes', () => {
    const ok = device.control(
      'ContentDirectory',
      envelope(
        `<u:Browse xmlns:u="${CDS}"><ObjectID>tracks</ObjectID><BrowseFlag>BrowseDirectChildren</BrowseFlag><Filter>*</Filter><StartingIndex>0</StartingIndex><RequestedCount>10</RequestedCount><SortCriteria></SortCriteria></u:Browse>`,
      ),
      `"${CDS}#Browse"`,
    );
    expect(ok.status).toBe(200);
    const result = text(child(child(child(child(parseXml(ok.body), 'Envelope'), 'Body'), 'BrowseResponse'), 'Result'));
    expect(text(child(didlItems(result)[0], 'title'))).toBe('A & <B>');
    const missing = device.control('ContentDirectory', envelope(`<u:Browse xmlns:u="${CDS}"><ObjectID>0</ObjectID></u:Browse>`), `"${CDS}#Browse"`);
    expect([missing.status, faultCode(missing.body)]).toEqual([500, '402']);
    const deep = device.control(
      'ContentDirectory',
      envelope(`<u:Browse xmlns:u="${CDS}">${'<a>'.repeat(100)}${'</a>'.repeat(100)}</u:Browse>`),
      `"${CDS}#Browse"`,
    );
    expect(faultCode(deep.body)).toBe('402');
    const unknown = device.control('ContentDirectory', envelope(`<u:Destroy xmlns:u="${CDS}"/>`), `"${CDS}#Destroy"`);
    expect(faultCode(unknown.body)).toBe('401');
    const caps = device.control('ContentDirectory', envelope(`<u:GetSearchCapabilities xmlns:u="${CDS}"/>`), `"${CDS}#GetSearchCapabilities"`);
    expect(caps.body).toContain('upnp:artist');
  });

  test('ConnectionManager: the Source protocols are the library’s mime types', () => {
    const CM = 'urn:schemas-upnp-org:service:ConnectionManager:1';
    const r = device.control('ConnectionManager', envelope(`<u:GetProtocolInfo xmlns:u="${CM}"/>`), `"${CM}#GetProtocolInfo"`);
    expect(r.body).toContain('<Source>http-get:*:audio/mpeg:');
    const bad = device.control(
      'ConnectionManager',
      envelope(`<u:GetCurrentConnectionInfo xmlns:u="${CM}"><ConnectionID>7</ConnectionID></u:GetCurrentConnectionInfo>`),
      `"${CM}#GetCurrentConnectionInfo"`,
    );
    expect(faultCode(bad.body)).toBe('706');
  });
});
