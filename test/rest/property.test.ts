/**
 * Property tests over real HTTP: for every operation, arbitrary query strings (the
 * operation's parameter names plus junk, values with unicode, %-sequences good and bad,
 * quotes, & and =, long strings, numbers) never get a 5xx, always get JSON, and every
 * failure has the documented error shape; successes match the operation's response schema.
 */
import fc from 'fast-check';
import { OPERATIONS, parameterNames, type Operation } from '../../src/operations/table';
import { startHub, type TestHub } from '../helpers/hub';
import { AUTH, expectErrorShape, httpGet, rawRequest, startWavServer, type WavServer } from './util';

const RUNS = Number(process.env.REST_PROPERTY_RUNS ?? 40);
/** Keeps TTS synthesis of random texts short; longer texts exercise TextTooLong. */
const MAX_TEXT = 120;

let h: TestHub;
let wav: WavServer;
let deviceIds: string[];
let persistentIds: string[];
let session: string;

beforeAll(async () => {
  [h, wav] = await Promise.all([startHub({ speakers: { virtual: { count: 2 } }, tts: { maxTextLength: MAX_TEXT } }), startWavServer()]);
  session = h.session;
  deviceIds = (await h.op('device_list')).DeviceList.map((d: { DeviceID: string }) => d.DeviceID);
  persistentIds = (await h.op('media_list')).MediaList.map((m: { PersistentID: string }) => m.PersistentID);
});
afterAll(async () => {
  await h?.op('stop_play').catch(() => undefined);
  await h?.close();
  await wav?.close();
});

/** Placeholder replaced by the live SessionToken when a request is sent. */
const SESSION = '\u0000SESSION\u0000';

const PERCENT = [
  '%',
  '%%',
  '%E0%A4%A',
  '%E0%A4',
  '%zz',
  '%00',
  '%C3%A9',
  '%2B',
  '%26',
  '%3D',
  '%22',
  '%0A',
  '%0D%0A',
  '%FF',
  '%u00e9',
  '%C0%AF',
  '%ED%A0%80',
  '%F0%9F%94%8A',
];
const PUNCT = ['"', '""', '"a b"', '&', '=', '&&', '==', "'", '?', '#', '+', ' ', ',', ',,', ';', '\\', '/', '<script>', '\t', '%20'];
const NUMBERS = [
  '0',
  '-1',
  '1',
  '50',
  '51',
  '2.5',
  '1e3',
  '1e309',
  'NaN',
  'Infinity',
  '-0',
  '007',
  '9'.repeat(40),
  '0x10',
  ' 5 ',
  '100',
  '999999999',
  '-999999999',
];

function valueArb(): fc.Arbitrary<string> {
  const urls = fc.constantFrom(
    `${wav.base}/p.wav`,
    `${wav.base}/p.wav?a=1&b=2`,
    'http://127.0.0.1:1/x.mp3',
    'https://127.0.0.1:1/x',
    'rtsp://127.0.0.1:1/x',
    'rstp://127.0.0.1:1/x',
    'mms://',
    'ftp://x',
    'file:///etc/passwd',
    'http://[::1',
    'http://%',
    'javascript:alert(1)',
  );
  const piece = fc.oneof(
    { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) },
    { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 8 }) },
    { weight: 2, arbitrary: fc.constantFrom(...PERCENT) },
    { weight: 2, arbitrary: fc.constantFrom(...PUNCT) },
    { weight: 2, arbitrary: fc.constantFrom(...NUMBERS) },
    { weight: 1, arbitrary: fc.integer().map(String) },
    { weight: 1, arbitrary: fc.double().map(String) },
    { weight: 2, arbitrary: urls },
    { weight: 2, arbitrary: fc.constantFrom(...deviceIds, ...persistentIds, deviceIds.join(','), `${deviceIds[0]},junk`) },
    { weight: 1, arbitrary: fc.constant(SESSION) },
  );
  return fc.oneof(
    { weight: 4, arbitrary: piece },
    { weight: 3, arbitrary: fc.array(piece, { minLength: 1, maxLength: 5 }).map((a) => a.join('')) },
    // Long values: beyond MediaUrl's 4096, Text's limit, and near the request-line limits.
    {
      weight: 1,
      arbitrary: fc
        .integer({ min: 100, max: 20_000 })
        .chain((n) => fc.constantFrom('x', 'é', '%', '&', 'a b').map((c) => c.repeat(Math.ceil(n / c.length)))),
    },
  );
}

function keyArb(op: Operation): fc.Arbitrary<string> {
  const names = [...parameterNames(op), 'SessionID', 'SesssionToken', 'Priority', 'access_token', '_'];
  return fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...names) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 10 }) },
    {
      weight: 1,
      arbitrary: fc.constantFrom('', '__proto__', 'constructor', 'toString', 'sessiontoken', 'Session%54oken', '%', '=', '&', 'a b', '"Text"'),
    },
  );
}

/** Values that pass validation (or nearly), so that handlers and the hub core are reached. */
function plausibleArb(name: string): fc.Arbitrary<string> {
  switch (name) {
    case 'SessionToken':
      return fc.constantFrom(SESSION, SESSION, SESSION, `"${SESSION}"`, ` ${SESSION} `);
    case 'DeviceID':
      return fc.constantFrom(...deviceIds, `"${deviceIds[0]}"`, '1');
    case 'DeviceIDList':
      return fc.constantFrom(
        deviceIds.join(','),
        deviceIds[0],
        ` ${deviceIds[1]} , ${deviceIds[0]} `,
        `${deviceIds[0]},${deviceIds[0]}`,
        `${deviceIds[0]},1`,
      );
    case 'PersistentID':
      return fc.constantFrom(...persistentIds, '1');
    case 'MediaUrl':
      return fc.constantFrom(
        `${wav.base}/p.wav`,
        `${wav.base}/p.wav?a=1&b=2`,
        `"${wav.base}/q.wav"`,
        'http://127.0.0.1:1/x.mp3',
        'rtsp://127.0.0.1:1/x',
      );
    case 'Text':
      return fc.oneof(
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }),
        fc.constantFrom('Hello there', '"Dinner is ready"', 'caf\u00e9 + cr\u00e8me', '12 & 13 = 25'),
      );
    case 'Volume':
      return fc.integer({ min: 0, max: 50 }).map(String);
    case 'Priority':
      return fc.integer({ min: -5, max: 300 }).map(String);
    default:
      return valueArb();
  }
}

interface Sample {
  dialect: string;
  transport: 'fetch' | 'raw';
  pairs: { key: string; value: string; encode: boolean }[];
}

function sampleArb(op: Operation): fc.Arbitrary<Sample> {
  const junkPair = fc.record({ key: keyArb(op), value: valueArb(), encode: fc.boolean() });
  // Each of the operation's own parameters: usually present, usually plausible, sometimes junk.
  const own = parameterNames(op).map((name) =>
    fc.option(
      fc.record({
        key: fc.constant(name),
        value: fc.oneof({ weight: 3, arbitrary: plausibleArb(name) }, { weight: 1, arbitrary: valueArb() }),
        encode: fc.boolean(),
      }),
      { freq: 6 },
    ),
  );
  const pairs = fc
    .tuple(fc.tuple(...own), fc.array(junkPair, { maxLength: 4 }))
    .map(([mine, junk]) => [...mine.filter((p): p is NonNullable<typeof p> => p !== null), ...junk])
    .chain((all) => fc.shuffledSubarray(all, { minLength: all.length, maxLength: all.length }));
  return fc.record({
    dialect: fc.constantFrom('/api/v1/', '/v1/', '//api//v1//'),
    transport: fc.constantFrom<'fetch' | 'raw'>('fetch', 'fetch', 'fetch', 'raw'),
    pairs,
  });
}

/** Percent-encodes every byte but the unreserved ones; works for lone surrogates too. */
function encodeAll(s: string): string {
  return [...Buffer.from(s, 'utf8')]
    .map((b) => (/[A-Za-z0-9\-_.~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`))
    .join('');
}

function queryOf(sample: Sample): string {
  return sample.pairs
    .map(({ key, value, encode }) => {
      const v = value.split(SESSION).join(session);
      return encode ? `${encodeAll(key)}=${encodeAll(v)}` : `${key}=${v}`;
    })
    .join('&');
}

async function send(op: Operation, sample: Sample): Promise<{ status: number; contentType: string; body: unknown; text: string }> {
  const query = queryOf(sample);
  const path = `${sample.dialect}${op.name}${query ? `?${query}` : ''}`;
  if (sample.transport === 'raw') {
    // Exactly these bytes on the wire; only CR and LF would end the request line.
    const line = `GET ${path.replace(/[\r\n]/g, '')} HTTP/1.1`;
    const r = await rawRequest(h.base, line, AUTH, 15_000);
    return { status: r.status, contentType: r.headers['content-type'] ?? '', body: r.body, text: r.text };
  }
  const r = await httpGet(h.base + path, AUTH, 15_000);
  return { status: r.status, contentType: r.headers.get('content-type') ?? '', body: r.body, text: r.text };
}

/** Puts the hub in a state where the operation can succeed: nothing playing, or paused hub media to resume. */
async function prepare(op: Operation): Promise<void> {
  const run = (name: string, params: Record<string, string> = {}) =>
    httpGet(`${h.base}/api/v1/${name}?${new URLSearchParams({ SessionToken: session, ...params })}`, AUTH);
  if (op.name.startsWith('play_')) await run('stop_play');
  if (op.name.startsWith('resume_')) {
    await run('play_hub_media_party_mode', { PersistentID: persistentIds[0], Priority: '1000000' });
    await run('pause_play');
  }
}

describe.each(OPERATIONS.map((op) => [op.name, op] as const))('%s', (_name, op) => {
  test(`${RUNS} arbitrary query strings: no 5xx, always JSON, failures in the documented shape`, async () => {
    await fc.assert(
      fc.asyncProperty(sampleArb(op), async (sample) => {
        await prepare(op);
        const r = await send(op, sample);
        const where = `${op.name} ${JSON.stringify(sample).slice(0, 400)}`;
        if (r.status >= 500) throw new Error(`HTTP ${r.status} for ${where}: ${r.text.slice(0, 300)}`);
        if (!/^application\/json/.test(r.contentType)) throw new Error(`not JSON (${r.contentType}) for ${where}: ${r.text.slice(0, 300)}`);
        if (typeof r.body !== 'object' || r.body === null) throw new Error(`body is not a JSON object for ${where}: ${r.text.slice(0, 300)}`);
        const body = r.body as Record<string, unknown>;
        if (r.status !== 200 || body.Result === 'false') {
          expectErrorShape(r.status, body, where);
        } else if (!(sample.dialect === '/v1/' && op.name === 'init_session')) {
          const parsed = op.response.safeParse(body);
          if (!parsed.success)
            throw new Error(`success body does not match the ${op.name} response schema for ${where}: ${JSON.stringify(body).slice(0, 300)}`);
        }
        if (op.name === 'close_session' && body.Result === 'true') {
          // The live session was closed: take a new one for the next runs.
          session = (await httpGet(`${h.base}/api/v1/init_session`, AUTH)).body.SessionToken;
        }
      }),
      { numRuns: RUNS },
    );
  });
});

describe('afterwards', () => {
  test('the hub stays up and logged no unexpected fault', async () => {
    await httpGet(`${h.base}/api/v1/stop_play?SessionToken=${session}`, AUTH);
    const r = await httpGet(`${h.base}/api/v1/device_count?SessionToken=${session}`, AUTH);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ DeviceCount: '2' });
    const faults = h.logs.filter((l) => JSON.parse(l).level >= 50);
    expect(faults).toEqual([]);
  });
});
