/**
 * A bad-input matrix over every parameter of every operation, through real HTTP: missing
 * and malformed values, unknown sessions and operations, and the documented error shape.
 */
import { ERROR_CODES } from '../../src/core/errors';
import { OPERATIONS, parameterNames, type Operation } from '../../src/operations/table';
import { startHub, type TestHub } from '../helpers/hub';
import { AUTH, expectErrorShape, httpGet, rawRequest, startWavServer, type WavServer } from './util';

let h: TestHub;
let wav: WavServer;
let deviceIds: string[];
let persistentId: string;

beforeAll(async () => {
  [h, wav] = await Promise.all([startHub({ speakers: { virtual: { count: 2 } } }), startWavServer()]);
  deviceIds = (await h.op('device_list')).DeviceList.map((d: { DeviceID: string }) => d.DeviceID);
  const media = (await h.op('media_list')).MediaList;
  expect(media.length).toBeGreaterThan(0);
  persistentId = media[0].PersistentID;
  // Session-target plays have speakers, so failures below are about the parameters.
  expect(await h.op('set_party_mode')).toEqual({ Result: 'true' });
});
afterAll(async () => {
  await h?.op('stop_play').catch(() => undefined);
  await h?.close();
  await wav?.close();
});

/** A valid value for every parameter name. */
function validParams(op: Operation): Record<string, string> {
  const valid: Record<string, string> = {
    SessionToken: h.session,
    DeviceID: deviceIds[0],
    DeviceIDList: deviceIds.join(','),
    PersistentID: persistentId,
    MediaUrl: `${wav.base}/ok.wav`,
    Text: 'ok',
    Volume: '10',
    Priority: '100',
    Chime: 'false',
    Voice: 'en',
    StartAt: '0',
    AnnouncementID: 'AAAAAAAAAAAA',
    Mute: 'false',
    Power: 'off',
    Party: 'off',
    Mode: 'duck',
    DuckLevel: '-15',
    FadeMs: '500',
    PlaybackID: 'pb-999999',
  };
  const out: Record<string, string> = {};
  for (const name of parameterNames(op)) {
    if (!(name in valid)) throw new Error(`no valid value for ${op.name}.${name}: extend the test`);
    out[name] = valid[name];
  }
  // announce takes exactly one of Text, MediaUrl and PersistentID.
  if (op.name === 'announce') {
    delete out.MediaUrl;
    delete out.PersistentID;
  }
  return out;
}

async function call(op: string, params: Record<string, string>) {
  return httpGet(`${h.base}/api/v1/${op}?${new URLSearchParams(params)}`, AUTH);
}

/** Optional parameters (Priority; most of announce's) can be left out. */
const isOptional = (op: Operation, p: string) => {
  const schema = (op.params.shape as Record<string, { safeParse(v: unknown): { success: boolean } }>)[p];
  return !!schema && schema.safeParse(undefined).success;
};
const REQUIRED = OPERATIONS.flatMap((op) =>
  parameterNames(op)
    .filter((p) => !isOptional(op, p))
    .map((p) => [op.name, p] as const),
);

describe('a missing required parameter: 400 InvalidParameter naming it', () => {
  test('every parameter is covered (sanity)', () => {
    const names = new Set(OPERATIONS.flatMap((op) => parameterNames(op)));
    expect([...names].sort()).toEqual([
      'AnnouncementID',
      'Chime',
      'DeviceID',
      'DeviceIDList',
      'DuckLevel',
      'FadeMs',
      'MediaUrl',
      'Mode',
      'Mute',
      'Party',
      'PersistentID',
      'PlaybackID',
      'Power',
      'Priority',
      'SessionToken',
      'StartAt',
      'Text',
      'Voice',
      'Volume',
    ]);
    // Spec operations: Priority optional everywhere it exists, plus Voice on play_tts*, StartAt on play_web_media* and the zone a
    // transport or status operation acts on (PlaybackID, DeviceID) on pause_play, stop_play, playback_status (beyond the spec).
    const ZONED = ['pause_play', 'stop_play', 'playback_status'];
    expect(OPERATIONS.filter((o) => !o.beyondSpec).flatMap((op) => parameterNames(op).filter((p) => isOptional(op, p)))).toEqual(
      OPERATIONS.filter((o) => !o.beyondSpec && (parameterNames(o).includes('Priority') || ZONED.includes(o.name))).flatMap((o) =>
        ZONED.includes(o.name)
          ? ['PlaybackID', 'DeviceID']
          : o.name.startsWith('play_tts')
            ? ['Priority', 'Voice']
            : o.name.startsWith('play_web_media')
              ? ['Priority', 'StartAt']
              : ['Priority'],
      ),
    );
    // Every operation but init_session takes SessionToken.
    expect(REQUIRED.filter(([, p]) => p === 'SessionToken')).toHaveLength(OPERATIONS.length - 1);
  });

  test.each(REQUIRED)('%s without %s', async (opName, param) => {
    const op = OPERATIONS.find((o) => o.name === opName)!;
    const params = validParams(op);
    delete params[param];
    const r = await call(opName, params);
    expect({ status: r.status, ErrorCode: r.body.ErrorCode, Parameter: r.body.Parameter }).toEqual({
      status: 400,
      ErrorCode: 'InvalidParameter',
      Parameter: param,
    });
    expect(r.body.ErrorMessage).toContain(param);
    expectErrorShape(r.status, r.body, `${opName} without ${param}`);
  });

  test.each(REQUIRED.filter(([, p]) => p === 'SessionToken' || p === 'Text' || p === 'MediaUrl'))(
    '%s with %s present but empty',
    async (opName, param) => {
      const op = OPERATIONS.find((o) => o.name === opName)!;
      const r = await call(opName, { ...validParams(op), [param]: '' });
      expect({ status: r.status, ErrorCode: r.body.ErrorCode, Parameter: r.body.Parameter }).toEqual({
        status: 400,
        ErrorCode: 'InvalidParameter',
        Parameter: param,
      });
      expectErrorShape(r.status, r.body);
    },
  );
});

/** Malformed values per parameter kind, with the documented error code. */
const MALFORMED: Record<string, [string, keyof typeof ERROR_CODES][]> = {
  PlaybackID: [
    ['abc', 'InvalidParameter'],
    ['pb-', 'InvalidParameter'],
    ['pb-1x', 'InvalidParameter'],
    ['', 'InvalidParameter'],
  ],
  DeviceID: [
    ['abc', 'InvalidParameter'],
    ['12.5', 'InvalidParameter'],
    ['', 'InvalidParameter'],
    ['1'.repeat(33), 'InvalidParameter'],
    ['-12', 'InvalidParameter'],
    ['12 34', 'InvalidParameter'],
    ['0x1F', 'InvalidParameter'],
  ],
  DeviceIDList: [
    [',,', 'InvalidParameter'],
    ['a,b', 'InvalidParameter'],
    ['', 'InvalidParameter'],
    ['123,abc', 'InvalidParameter'],
    [`${'1'.repeat(33)}`, 'InvalidParameter'],
  ],
  PersistentID: [
    ['-1', 'InvalidParameter'],
    ['abc', 'InvalidParameter'],
    ['1.5', 'InvalidParameter'],
    ['1'.repeat(41), 'InvalidParameter'],
    ['', 'InvalidParameter'],
  ],
  Volume: [
    ['51', 'InvalidParameter'],
    ['-1', 'InvalidParameter'],
    ['2.5', 'InvalidParameter'],
    ['ten', 'InvalidParameter'],
    ['', 'InvalidParameter'],
    ['100', 'InvalidParameter'],
    ['1e1', 'InvalidParameter'],
  ],
  Priority: [
    ['high', 'InvalidParameter'],
    ['1.5', 'InvalidParameter'],
    ['', 'InvalidParameter'],
    ['1e3', 'InvalidParameter'],
  ],
  MediaUrl: [
    ['not a url', 'InvalidParameter'],
    ['/relative/path.mp3', 'InvalidParameter'],
    ['http://', 'InvalidParameter'],
    ['ftp://x', 'UnsupportedScheme'],
    ['file:///etc/passwd', 'UnsupportedScheme'],
    ['javascript:alert(1)', 'UnsupportedScheme'],
    ['data:audio/wav;base64,UklGRg==', 'UnsupportedScheme'],
    ['gopher://127.0.0.1/x', 'UnsupportedScheme'],
  ],
  Chime: [
    ['yes', 'InvalidParameter'],
    ['', 'InvalidParameter'],
    ['-1', 'InvalidParameter'],
  ],
  StartAt: [
    ['-1', 'InvalidParameter'],
    ['soon', 'InvalidParameter'],
    ['86401', 'InvalidParameter'],
  ],
  Voice: [
    ['', 'InvalidParameter'],
    ['en us', 'InvalidParameter'],
    ['x'.repeat(65), 'InvalidParameter'],
  ],
  Mute: [
    ['yes', 'InvalidParameter'],
    ['', 'InvalidParameter'],
    ['2', 'InvalidParameter'],
  ],
  Power: [
    ['standby', 'InvalidParameter'],
    ['', 'InvalidParameter'],
  ],
  Mode: [
    ['mix', 'InvalidParameter'],
    ['', 'InvalidParameter'],
  ],
  DuckLevel: [
    ['-41', 'InvalidParameter'],
    ['3', 'InvalidParameter'],
    ['loud', 'InvalidParameter'],
  ],
  FadeMs: [
    ['-1', 'InvalidParameter'],
    ['10001', 'InvalidParameter'],
    ['1.5', 'InvalidParameter'],
  ],
  Party: [
    ['maybe', 'InvalidParameter'],
    ['', 'InvalidParameter'],
  ],
  AnnouncementID: [
    ['', 'InvalidParameter'],
    ['a/b', 'InvalidParameter'],
    ['x'.repeat(65), 'InvalidParameter'],
  ],
  Text: [
    ['', 'InvalidParameter'],
    ['""', 'InvalidParameter'],
    ['   ', 'InvalidParameter'],
    ['" "', 'InvalidParameter'],
  ],
};

const MALFORMED_CASES = OPERATIONS.flatMap((op) =>
  parameterNames(op).flatMap((p) => (MALFORMED[p] ?? []).map(([value, code]) => [op.name, p, value, code] as const)),
);

describe('malformed values: 400 with the documented code, naming the parameter', () => {
  test('every operation taking a parameter of these kinds is covered (sanity)', () => {
    const covered = new Set(MALFORMED_CASES.map(([op, p]) => `${op}.${p}`));
    for (const op of OPERATIONS) for (const p of parameterNames(op)) if (p !== 'SessionToken') expect(covered).toContain(`${op.name}.${p}`);
  });

  test.each(MALFORMED_CASES)('%s with %s=%j → %s', async (opName, param, value, code) => {
    const op = OPERATIONS.find((o) => o.name === opName)!;
    const r = await call(opName, { ...validParams(op), [param]: value });
    expect({ status: r.status, ErrorCode: r.body.ErrorCode, Parameter: r.body.Parameter }).toEqual({
      status: ERROR_CODES[code].status,
      ErrorCode: code,
      Parameter: param,
    });
    expectErrorShape(r.status, r.body, `${opName} ${param}=${value}`);
  });

  test('a refused set_volume/set_volume_device changes nothing', async () => {
    const before = await h.op('device_list');
    for (const [value] of MALFORMED.Volume) {
      await call('set_volume', { SessionToken: h.session, Volume: value });
      await call('set_volume_device', { SessionToken: h.session, DeviceID: deviceIds[0], Volume: value });
    }
    expect(await h.op('device_list')).toEqual(before);
  });

  test.each(OPERATIONS.filter((o) => parameterNames(o).includes('Text')).map((o) => o.name))(
    '%s with a Text over tts.maxTextLength → 400 TextTooLong',
    async (opName) => {
      const op = OPERATIONS.find((o) => o.name === opName)!;
      const r = await call(opName, { ...validParams(op), Text: 'word '.repeat(250) });
      expect({ status: r.status, ErrorCode: r.body.ErrorCode }).toEqual({ status: 400, ErrorCode: 'TextTooLong' });
      expectErrorShape(r.status, r.body);
    },
  );
});

describe('accepted MediaUrl schemes pass validation', () => {
  const cases = OPERATIONS.filter((o) => !o.beyondSpec && parameterNames(o).includes('MediaUrl')).flatMap((o) =>
    ['http', 'HTTP', 'https', 'rtsp', 'rstp', 'mms'].map((scheme) => [o.name, scheme] as const),
  );
  test.each(cases)('%s with a %s: URL', async (opName, scheme) => {
    const op = OPERATIONS.find((o) => o.name === opName)!;
    const url = scheme.toLowerCase() === 'http' ? `${scheme}://127.0.0.1:${wav.port}/ok.wav` : `${scheme}://127.0.0.1:1/stream`;
    const r = await call(opName, { ...validParams(op), MediaUrl: url });
    expect(r.status).toBe(200);
    expect(['InvalidParameter', 'UnsupportedScheme']).not.toContain(r.body.ErrorCode);
    if (scheme.toLowerCase() === 'http') {
      expect(r.body).toEqual({ Result: 'true' });
    } else {
      // Virtual speakers only fetch http(s); the port-1 https URL is refused at connect.
      expect(r.body).toMatchObject({ Result: 'false', ErrorCode: 'PlaybackFailed' });
      expectErrorShape(r.status, r.body);
    }
  });
});

describe('sessions', () => {
  const needSession = OPERATIONS.filter((o) => o.needsSession);

  test.each(needSession.map((o) => o.name))('%s with an unknown SessionToken → 200 SessionNotFound', async (opName) => {
    const op = OPERATIONS.find((o) => o.name === opName)!;
    for (const token of ['unknown-session', 'r:abciKaTbUgdpQFuvYtgMm0FRh', '1000', `${h.session}x`]) {
      const r = await call(opName, { ...validParams(op), SessionToken: token });
      expect({ token, status: r.status, body: r.body }).toMatchObject({
        token,
        status: 200,
        body: { Result: 'false', ErrorCode: 'SessionNotFound' },
      });
      expectErrorShape(r.status, r.body);
    }
  });

  test('a closed session is refused with SessionNotFound, and closing it again too', async () => {
    const { body } = await httpGet(`${h.base}/api/v1/init_session`, AUTH);
    const token = body.SessionToken as string;
    expect((await call('close_session', { SessionToken: token })).body).toEqual({ Result: 'true' });
    for (const op of ['device_count', 'close_session']) {
      const r = await call(op, { SessionToken: token });
      expect(r.body).toMatchObject({ Result: 'false', ErrorCode: 'SessionNotFound' });
      expectErrorShape(r.status, r.body);
    }
  });
});

describe('operation failures keep the documented shape', () => {
  test.each([
    ['device_info', { DeviceID: '1' }, 'DeviceNotFound'],
    ['get_volume_device', { DeviceID: '1' }, 'DeviceNotFound'],
    ['add_device_to_session', { DeviceID: '1' }, 'DeviceNotFound'],
    ['play_hub_media_party_mode', { PersistentID: '1' }, 'MediaNotFound'],
    ['play_web_media_selected_speakers', { MediaUrl: 'http://127.0.0.1:1/x', DeviceIDList: '1' }, 'DeviceNotFound'],
    ['play_web_media_party_mode', { MediaUrl: 'http://127.0.0.1:1/x' }, 'PlaybackFailed'],
    ['resume_hub_media', { PersistentID: '1' }, 'NotResumable'],
  ] as const)('%s %j → %s', async (opName, params, code) => {
    const r = await call(opName, { SessionToken: h.session, ...params });
    expect(r.status).toBe(200);
    expect(r.body.ErrorCode).toBe(code);
    expectErrorShape(r.status, r.body);
  });

  test('pause_play with nothing playing → NotPlaying', async () => {
    await h.op('stop_play');
    const r = await call('pause_play', { SessionToken: h.session });
    expect(r.body.ErrorCode).toBe('NotPlaying');
    expectErrorShape(r.status, r.body);
  });
});

describe('unknown operations and malformed paths', () => {
  test.each([
    '/api/v1/not_an_operation',
    '/api/v1/Device_Count',
    '/api/v1/DEVICE_COUNT',
    '/api/v1/device_count.json',
    '/api/v1/device_count/extra',
    '/v1/not_an_operation',
    '/api/v1',
    '/index.html', // `/` itself serves the browser client (test/cloud/browser.lab.test.ts)
    '/api/v1/%F0%9F%94%8A',
  ])('%s → 404 UnknownOperation', async (path) => {
    const r = await httpGet(`${h.base}${path}?SessionToken=${h.session}`, AUTH);
    expect(r.status).toBe(404);
    expect(r.body.ErrorCode).toBe('UnknownOperation');
    expectErrorShape(r.status, r.body);
  });

  test.each(['/api/v1/%E0%A4%A', '/api/v1/device_count%', '/api/v1/%zz', '/api/%c0%af/device_count'])(
    'a path with a malformed percent sequence (%s) still gets the documented error shape',
    async (path) => {
      const r = await httpGet(`${h.base}${path}?SessionToken=${h.session}`, AUTH);
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.status).toBeLessThan(500);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      expectErrorShape(r.status, r.body, path);
    },
  );

  test('a request line Node cannot parse gets the documented error shape', async () => {
    const r = await rawRequest(h.base, `GET /api/v1/device_count?SessionToken=${h.session}&x=\u0001 HTTP/1.1`);
    expect(r.status).toBe(400);
    expectErrorShape(r.status, r.body);
  });

  test('an over-long request line gets the documented error shape', async () => {
    const r = await httpGet(`${h.base}/api/v1/play_tts_party_mode?SessionToken=${h.session}&Text=${'a'.repeat(40_000)}`, AUTH);
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(r.status).toBeLessThan(500);
    expectErrorShape(r.status, r.body);
  });
});

test('the hub still works after all of this', async () => {
  expect(await h.op('device_count')).toEqual({ DeviceCount: '2' });
});
