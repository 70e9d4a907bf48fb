/**
 * The older clients of compatibility.md: the /v1 dialect with SessionID, doubled slashes,
 * the SesssionToken misspelling, unencoded MediaUrl and Text values, `+` as space and
 * percent-encoding; plus unit tests of the lenient query parser.
 */
import type { PlaybackSnapshot } from '../../src/core/events';
import { SESSION_PARAM_ALIASES } from '../../src/operations/dispatch';
import { OPERATIONS_BY_NAME, parameterNames } from '../../src/operations/table';
import { parseLenientQuery } from '../../src/http/lenient-query';
import { startHub, TEST_TOKEN, type TestHub } from '../helpers/hub';
import { AUTH, httpGet, makeWav, rawRequest, startWavServer, type WavServer } from './util';
import { eventually } from '../helpers/wait';

const SPEAKERS = 2;
let h: TestHub;
let wav: WavServer;
/** Titles of the playbacks the hub started (TTS titles are the spoken text). */
const started: PlaybackSnapshot[] = [];

beforeAll(async () => {
  [h, wav] = await Promise.all([startHub({ media: { samples: false }, speakers: { virtual: { count: SPEAKERS } } }), startWavServer()]);
  h.hub.core.events.on('playbackState', (s) => {
    if (s.state === 'PlayerStatePlaying') started.push(s);
  });
});
afterAll(async () => {
  await h?.close();
  await wav?.close();
});
afterEach(async () => {
  await h.op('stop_play');
});

const get = (path: string) => httpGet(h.base + path, AUTH);

describe('the first API version: /v1/<operation> with SessionID', () => {
  test('/v1/init_session answers {SessionID}, which works as SessionID on /v1 and as SessionToken on /api/v1', async () => {
    const init = await get('/v1/init_session');
    expect(init.status).toBe(200);
    expect(typeof init.body.SessionID).toBe('string');
    expect(init.body.SessionID.length).toBeGreaterThan(0);
    expect(init.body).not.toHaveProperty('SessionToken');
    const id = init.body.SessionID as string;
    expect((await get(`/v1/device_count?SessionID=${id}`)).body).toEqual({ DeviceCount: String(SPEAKERS) });
    expect((await get(`/api/v1/device_count?SessionToken=${id}`)).body).toEqual({ DeviceCount: String(SPEAKERS) });
    expect((await get(`/api/v1/device_count?SessionID=${id}`)).body).toEqual({ DeviceCount: String(SPEAKERS) });
  });

  test('commands through /v1 really act: set_volume then get_volume, device_list, playback_status', async () => {
    const { body: init } = await get('/v1/init_session');
    const id = init.SessionID as string;
    expect((await get(`/v1/set_volume?SessionID=${id}&Volume=17`)).body).toEqual({ Result: 'true' });
    expect((await get(`/v1/get_volume?SessionID=${id}`)).body).toEqual({ Volume: '17' });
    expect((await get(`/api/v1/get_volume?SessionToken=${id}`)).body).toEqual({ Volume: '17' });
    const list = (await get(`/v1/device_list?SessionID=${id}`)).body.DeviceList;
    expect(list).toHaveLength(SPEAKERS);
    expect(list.every((d: { Volume: number }) => d.Volume === 17)).toBe(true);
    expect((await get(`/v1/playback_status?SessionID=${id}`)).body).toEqual({ PlaybackState: 'PlayerStateStopped', TimeElapsed: '-1' });
  });

  test('an unknown SessionID is refused with SessionNotFound; errors speak of SessionID, the name this dialect uses', async () => {
    const unknown = (await get('/v1/device_count?SessionID=1000')).body;
    expect(unknown).toMatchObject({ Result: 'false', ErrorCode: 'SessionNotFound' });
    expect(unknown.ErrorMessage).toMatch(/SessionID/);
    expect(unknown.ErrorMessage).not.toMatch(/SessionToken/);
    const missing = await get('/v1/device_count');
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ ErrorCode: 'InvalidParameter', Parameter: 'SessionID' });
    expect(missing.body.ErrorMessage).not.toMatch(/SessionToken/);
    // The current dialect keeps its own name.
    expect((await get('/api/v1/device_count')).body).toMatchObject({ ErrorCode: 'InvalidParameter', Parameter: 'SessionToken' });
  });

  test('the misspelling SesssionToken is accepted', async () => {
    expect((await get(`/api/v1/device_count?SesssionToken=${h.session}`)).body).toEqual({ DeviceCount: String(SPEAKERS) });
    expect((await get(`/api/v1/set_volume?SesssionToken=${h.session}&Volume=9`)).body).toEqual({ Result: 'true' });
    expect(await h.op('get_volume')).toEqual({ Volume: '9' });
  });
});

describe('paths', () => {
  test.each([
    '//api//v1//device_count',
    '/api//v1/device_count',
    '//api/v1/device_count',
    '/api/v1//device_count',
    '/api/v1/device_count/',
    '//v1//device_count',
  ])('%s is served', async (path) => {
    const r = await get(`${path}?SessionToken=${h.session}`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ DeviceCount: String(SPEAKERS) });
  });

  test('doubled slashes also on a command: //api//v1//set_volume', async () => {
    expect((await get(`//api//v1//set_volume?SessionToken=${h.session}&Volume=31`)).body).toEqual({ Result: 'true' });
    expect(await h.op('get_volume')).toEqual({ Volume: '31' });
  });
});

describe('unencoded MediaUrl with ? and & reaches the speakers intact', () => {
  async function playAndCheck(query: string, expectedTarget: string): Promise<void> {
    wav.requests.length = 0;
    const r = await get(`/api/v1/play_web_media_party_mode?${query}`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ Result: 'true' });
    // The speakers really fetched the URL (one download shared by all virtual speakers), with the exact path and query.
    await eventually(() => wav.requests.length >= 1, 5000, 'speakers fetching the media');
    expect(wav.requests.map((q) => q.url)).toEqual([expectedTarget]);
    expect(await h.op('playback_status')).toMatchObject({ PlaybackState: 'PlayerStatePlaying' });
    expect(started.at(-1)?.url).toBe(`${wav.base}${expectedTarget}`);
  }

  test('MediaUrl after SessionToken', async () => {
    await playAndCheck(`SessionToken=${h.session}&MediaUrl=${wav.base}/a.wav?x=1&y=2`, '/a.wav?x=1&y=2');
  });

  test('MediaUrl before SessionToken', async () => {
    await playAndCheck(`MediaUrl=${wav.base}/a.wav?x=1&y=2&SessionToken=${h.session}`, '/a.wav?x=1&y=2');
  });

  test('MediaUrl between SessionToken and Priority; the Priority applies to the play, not the URL', async () => {
    await playAndCheck(`SessionToken=${h.session}&MediaUrl=${wav.base}/a.wav?x=1&y=2&Priority=150`, '/a.wav?x=1&y=2');
    expect(started.at(-1)?.priority).toBe(150);
  });

  test('an unencoded MediaUrl whose query holds =, empty values and a +', async () => {
    await playAndCheck(`SessionToken=${h.session}&MediaUrl=${wav.base}/b.wav?a=1=2&b=&c+d=e`, '/b.wav?a=1=2&b=&c+d=e');
  });

  test('a percent-encoded MediaUrl works too', async () => {
    const url = `${wav.base}/a.wav?x=1&y=2`;
    await playAndCheck(`SessionToken=${h.session}&MediaUrl=${encodeURIComponent(url)}`, '/a.wav?x=1&y=2');
  });

  test('a MediaUrl in surrounding double quotes', async () => {
    await playAndCheck(`SessionToken=${h.session}&MediaUrl="${wav.base}/a.wav?x=1&y=2"`, '/a.wav?x=1&y=2');
  });
});

describe('Text', () => {
  async function ttsTitle(query: string, raw = false): Promise<string | undefined> {
    const before = started.length;
    const r = raw ? await rawRequest(h.base, `GET /api/v1/play_tts_party_mode?${query} HTTP/1.1`) : await get(`/api/v1/play_tts_party_mode?${query}`);
    expect({ status: r.status, body: r.body }).toEqual({ status: 200, body: { Result: 'true' } });
    expect(started.length).toBe(before + 1);
    const s = started.at(-1)!;
    expect(s.kind).toBe('tts');
    expect(s.deviceIds).toHaveLength(SPEAKERS);
    return s.title;
  }

  test('raw spaces and surrounding double quotes over a raw TCP request line are accepted', async () => {
    expect(await ttsTitle(`SessionToken=${h.session}&Text="Hello there world"`, true)).toBe('Hello there world');
  });

  test('raw spaces with the Text first, SessionToken last, over raw TCP', async () => {
    expect(await ttsTitle(`Text="Good morning, kitchen"&SessionToken=${h.session}`, true)).toBe('Good morning, kitchen');
  });

  test('raw spaces still work when the request line arrives in several TCP segments', async () => {
    const text = 'This announcement is long enough that a real network splits its request line';
    const line = `GET /api/v1/play_tts_party_mode?SessionToken=${h.session}&Text="${text}" HTTP/1.1`;
    const before = started.length;
    // Cut inside the Text, so the first segment holds a space but no line end.
    const r = await rawRequest(h.base, line, AUTH, 10_000, [line.indexOf('long') + 2, line.indexOf('splits')]);
    expect({ status: r.status, body: r.body }).toEqual({ status: 200, body: { Result: 'true' } });
    expect(started.length).toBe(before + 1);
    expect(started.at(-1)?.title).toBe(text);
  });

  test('raw & and = inside an unquoted Text stay in the Text', async () => {
    expect(await ttsTitle(`SessionToken=${h.session}&Text=Salt & pepper = dinner`, true)).toBe('Salt & pepper = dinner');
  });

  test('+ in Text means a space; %2B is a plus', async () => {
    expect(await ttsTitle(`SessionToken=${h.session}&Text=Hello+there+world`)).toBe('Hello there world');
    expect(await ttsTitle(`SessionToken=${h.session}&Text=one%2Bone+is+two`)).toBe('one+one is two');
  });

  test('percent-encoded Text, including quotes, UTF-8 and an encoded &', async () => {
    expect(await ttsTitle(`SessionToken=${h.session}&Text=${encodeURIComponent('"Caf\u00e9 & cr\u00e8me"')}`)).toBe('Caf\u00e9 & cr\u00e8me');
    expect(await ttsTitle(`SessionToken=${h.session}&Text=%48%65%6C%6C%6F`)).toBe('Hello');
  });
});

describe('percent-encoded values of the other kinds', () => {
  test('DeviceID, Volume, PersistentID-free ops and SessionToken, all percent-encoded', async () => {
    const list = (await h.op('device_list')).DeviceList as { DeviceID: string }[];
    const id = list[0].DeviceID;
    const encId = [...id].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).join('');
    const encSession = [...h.session].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');
    expect((await get(`/api/v1/set_volume_device?SessionToken=${encSession}&DeviceID=${encId}&Volume=%32%33`)).body).toEqual({ Result: 'true' });
    expect((await get(`/api/v1/get_volume_device?SessionToken=${h.session}&DeviceID=${id}`)).body).toEqual({ Volume: '23' });
    expect((await get(`/api/v1/device_info?SessionToken=${h.session}&DeviceID=%22${id}%22`)).body.DeviceID).toBe(id);
    const sel = `${list[0].DeviceID},${list[1].DeviceID}`;
    wav.requests.length = 0;
    const r = await get(
      `/api/v1/play_web_media_selected_speakers?SessionToken=${h.session}&DeviceIDList=${encodeURIComponent(sel)}&MediaUrl=${encodeURIComponent(`${wav.base}/c.wav`)}`,
    );
    expect(r.body).toEqual({ Result: 'true' });
    expect(started.at(-1)?.deviceIds.sort()).toEqual([list[0].DeviceID, list[1].DeviceID].sort());
  });
});

describe('parseLenientQuery', () => {
  const known = (op: string) => new Set([...parameterNames(OPERATIONS_BY_NAME.get(op)!), 'Priority', 'access_token', '_', ...SESSION_PARAM_ALIASES]);
  const web = known('play_web_media');
  const tts = known('play_tts');
  const count = known('device_count');

  test('no query, empty query, bare path', () => {
    expect(parseLenientQuery('/api/v1/device_count', count)).toEqual({});
    expect(parseLenientQuery('/api/v1/device_count?', count)).toEqual({});
  });

  test('ordinary decoding of names and values', () => {
    expect(parseLenientQuery('/x?SessionToken=abc&Session%49D=def', count)).toEqual({ SessionToken: 'abc', SessionID: 'def' });
    expect(parseLenientQuery('/x?Text=caf%C3%A9', tts)).toEqual({ Text: 'caf\u00e9' });
  });

  test('an unencoded MediaUrl keeps its ? and &, before and after SessionToken', () => {
    expect(parseLenientQuery('/x?SessionToken=s&MediaUrl=http://h/a.wav?x=1&y=2', web)).toEqual({
      SessionToken: 's',
      MediaUrl: 'http://h/a.wav?x=1&y=2',
    });
    expect(parseLenientQuery('/x?MediaUrl=http://h/a.wav?x=1&y=2&SessionToken=s', web)).toEqual({
      SessionToken: 's',
      MediaUrl: 'http://h/a.wav?x=1&y=2',
    });
    expect(parseLenientQuery('/x?MediaUrl=http://h/a?b&c&SessionToken=s', web)).toEqual({ SessionToken: 's', MediaUrl: 'http://h/a?b&c' });
  });

  test('a known name ends the free-text value; an unknown one does not', () => {
    expect(parseLenientQuery('/x?MediaUrl=http://h/a?x=1&Priority=5&y=2', web)).toEqual({ MediaUrl: 'http://h/a?x=1', Priority: '5', y: '2' });
    expect(parseLenientQuery('/x?MediaUrl=http://h/a?x=1&_=1700000000', web)).toEqual({ MediaUrl: 'http://h/a?x=1', _: '1700000000' });
  });

  test('+ is a space in Text but a literal plus in MediaUrl', () => {
    expect(parseLenientQuery('/x?Text=a+b%2Bc', tts)).toEqual({ Text: 'a b+c' });
    expect(parseLenientQuery('/x?MediaUrl=http://h/a+b.mp3', web)).toEqual({ MediaUrl: 'http://h/a+b.mp3' });
  });

  test('= inside a value, empty values, pieces without =', () => {
    expect(parseLenientQuery('/x?Text=a=b=c', tts)).toEqual({ Text: 'a=b=c' });
    expect(parseLenientQuery('/x?Text=&SessionToken=s', tts)).toEqual({ Text: '', SessionToken: 's' });
    expect(parseLenientQuery('/x?Text=rock&roll&SessionToken=s', tts)).toEqual({ Text: 'rock&roll', SessionToken: 's' });
    // Several pieces without = before the next one with =, and a last piece without =.
    expect(parseLenientQuery('/x?Text=a&b&c&d=e&SessionToken=s&f', tts)).toEqual({ Text: 'a&b&c&d=e', SessionToken: 's' });
    expect(parseLenientQuery('/x?Text=a&b&&c', tts)).toEqual({ Text: 'a&b&&c' });
    // Outside a free-text value a piece without = is dropped.
    expect(parseLenientQuery('/x?SessionToken=s&flag&Text=t', tts)).toEqual({ SessionToken: 's', Text: 't' });
  });

  test('raw quotes and spaces survive', () => {
    expect(parseLenientQuery('/x?Text="Hello there world"&SessionToken=s', tts)).toEqual({ Text: '"Hello there world"', SessionToken: 's' });
    expect(parseLenientQuery('/x?Text=%22Hello%20there%22', tts)).toEqual({ Text: '"Hello there"' });
  });

  test('malformed percent sequences are kept as they are, not thrown', () => {
    expect(parseLenientQuery('/x?Text=%E0%A4%A&SessionToken=s', tts)).toEqual({ Text: '%E0%A4%A', SessionToken: 's' });
    expect(parseLenientQuery('/x?Text=100%', tts)).toEqual({ Text: '100%' });
    expect(parseLenientQuery('/x?Text=%&SessionToken=%zz', tts)).toEqual({ Text: '%', SessionToken: '%zz' });
    expect(parseLenientQuery('/x?%E0=1', count)).toEqual({ '%E0': '1' });
  });

  test('a repeated parameter: the first one counts', () => {
    expect(parseLenientQuery('/x?SessionToken=a&SessionToken=b', count)).toEqual({ SessionToken: 'a' });
    expect(parseLenientQuery('/x?Text=one&Text=two&SessionToken=s', tts)).toEqual({ Text: 'one', SessionToken: 's' });
  });

  test('__proto__ and friends neither pollute nor break anything', () => {
    const out = parseLenientQuery('/x?__proto__=x&constructor=y&toString=z&SessionToken=s', count);
    expect(out.SessionToken).toBe('s');
    expect(Object.prototype.hasOwnProperty.call(out, '__proto__')).toBe(false);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });

  test('an unencoded MediaUrl is taken verbatim (its own %26 stays encoded); an encoded one is decoded once', () => {
    expect(parseLenientQuery('/x?MediaUrl=http://h/s?q=a%26b&SessionToken=s', web)).toEqual({ MediaUrl: 'http://h/s?q=a%26b', SessionToken: 's' });
    expect(parseLenientQuery('/x?MediaUrl=http%3A%2F%2Fh%2Fs%3Fq%3Da%2526b', web)).toEqual({ MediaUrl: 'http://h/s?q=a%26b' });
    expect(parseLenientQuery('/x?MediaUrl="http://h/a b"', web)).toEqual({ MediaUrl: '"http://h/a b"' });
  });

  test('a question mark inside the query is data', () => {
    expect(parseLenientQuery('/x?SessionToken=a?b', count)).toEqual({ SessionToken: 'a?b' });
  });

  test('the token string never needs to be known to parse (sanity: TEST_TOKEN is not special)', () => {
    expect(parseLenientQuery(`/x?access_token=${TEST_TOKEN}`, count)).toEqual({ access_token: TEST_TOKEN });
  });
});

test('makeWav writes a RIFF/WAVE header that matches its data', () => {
  const w = makeWav(1, 8000);
  expect(w.toString('ascii', 0, 4)).toBe('RIFF');
  expect(w.readUInt32LE(4)).toBe(w.length - 8);
  expect(w.toString('ascii', 8, 12)).toBe('WAVE');
  expect(w.readUInt32LE(40)).toBe(16000);
});
