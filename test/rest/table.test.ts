/**
 * The operation table against the specification: exactly the spec's operations (as copied
 * into docs/spec-operations.md, so the repository is self-contained) plus the documented
 * extra operations, each with a handler, a route in both dialects and an OpenAPI path.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { OPERATIONS, OPERATIONS_BY_NAME, parameterNames } from '../../src/operations/table';
import { startHub, type TestHub } from '../helpers/hub';
import { expectErrorShape, httpGet } from './util';

const DOC = readFileSync(path.join(__dirname, '../../docs/spec-operations.md'), 'utf8');

/** The operation names in the first column of the table between two markers of the doc. */
function listed(marker: string): string[] {
  const m = new RegExp(`<!-- ${marker}[^>]*-->([\\s\\S]*?)<!-- /${marker} -->`).exec(DOC);
  if (!m) throw new Error(`docs/spec-operations.md has no ${marker} section`);
  return [...m[1].matchAll(/^\| `([a-z_]+)` \|/gm)].map((r) => r[1]);
}

const specOperations = () => listed('spec-operations');
const extraOperations = () => listed('extra-operations');

let h: TestHub;
beforeAll(async () => {
  h = await startHub({ media: { samples: false }, speakers: { virtual: { count: 1 } } });
});
afterAll(async () => {
  await h?.close();
});

describe('operation table vs the specification', () => {
  // Session 2 + device management 6 + media_list 1 + play 9 + resume 3 + pause, stop,
  // playback_status, is_playing 4 + volume 4 = 29 operations.
  const SPEC_COUNT = 29;

  test(`the spec lists ${SPEC_COUNT} distinct operations, each once`, () => {
    const ops = specOperations();
    expect(ops).toHaveLength(SPEC_COUNT);
    expect(new Set(ops).size).toBe(SPEC_COUNT);
  });

  test('OPERATIONS holds exactly the spec operations and the documented extra ones, no duplicates', () => {
    const names = OPERATIONS.map((o) => o.name);
    expect(new Set(names).size).toBe(names.length);
    const extras = extraOperations();
    for (const e of extras) expect(specOperations()).not.toContain(e);
    expect([...names].sort()).toEqual([...new Set([...specOperations(), ...extras])].sort());
    expect(OPERATIONS_BY_NAME.size).toBe(SPEC_COUNT + extras.length);
    // The table marks the same ones as beyond the spec (the docs and OpenAPI say so).
    expect(
      OPERATIONS.filter((o) => o.beyondSpec)
        .map((o) => o.name)
        .sort(),
    ).toEqual([...extras].sort());
  });

  test('every operation has a handler, a parameter schema and a response schema', () => {
    for (const op of OPERATIONS) {
      expect(typeof op.handler).toBe('function');
      expect(typeof op.params.safeParse).toBe('function');
      expect(typeof op.response.safeParse).toBe('function');
      expect(op.needsSession).toBe(op.name !== 'init_session');
      expect(OPERATIONS_BY_NAME.get(op.name)).toBe(op);
    }
  });

  test('parameterNames puts SessionToken first for every operation but init_session', () => {
    for (const op of OPERATIONS) {
      const names = parameterNames(op);
      if (op.name === 'init_session') expect(names).toEqual([]);
      else expect(names[0]).toBe('SessionToken');
    }
  });
});

describe('routes', () => {
  test.each(OPERATIONS.map((o) => o.name))('%s is routed under /api/v1 and /v1', async (name) => {
    for (const prefix of ['/api/v1', '/v1']) {
      const r = await httpGet(`${h.base}${prefix}/${name}`);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      if (name === 'init_session') {
        expect(r.status).toBe(200);
        expect(typeof (r.body.SessionToken ?? r.body.SessionID)).toBe('string');
      } else {
        // No session given: the route exists and asks for one.
        expect(r.body.ErrorCode).not.toBe('UnknownOperation');
        expect(r.status).toBe(400);
        // Each dialect names the session parameter its own way.
        expect(r.body).toMatchObject({ Result: 'false', ErrorCode: 'InvalidParameter', Parameter: prefix === '/v1' ? 'SessionID' : 'SessionToken' });
      }
    }
  });

  test('an operation that does not exist answers 404 UnknownOperation in both dialects', async () => {
    for (const p of ['/api/v1/not_an_operation', '/v1/not_an_operation', '/api/v2/device_count', '/api/v1/']) {
      const r = await httpGet(`${h.base}${p}?SessionToken=${h.session}`);
      expect(r.status).toBe(404);
      expect(r.body.ErrorCode).toBe('UnknownOperation');
      expectErrorShape(r.status, r.body, p);
    }
  });
});

describe('OpenAPI', () => {
  test('GET /api/v1/openapi.json is public and documents every operation, and nothing else', async () => {
    const r = await httpGet(`${h.base}/api/v1/openapi.json`, {});
    expect(r.status).toBe(200);
    expect(r.body.openapi).toMatch(/^3\./);
    const paths = Object.keys(r.body.paths).sort();
    expect(paths).toEqual(OPERATIONS.map((o) => `/api/v1/${o.name}`).sort());
    for (const op of OPERATIONS) {
      const doc = r.body.paths[`/api/v1/${op.name}`].get;
      expect(doc.operationId).toBe(op.name);
      const documented = (doc.parameters as { name: string; in: string; required: boolean }[]).map((p) => p.name);
      expect(documented).toEqual(parameterNames(op));
      for (const p of doc.parameters) {
        expect(p.in).toBe('query');
        // Priority is the spec operations' only optional parameter (and Voice on play_tts*, StartAt on
        // play_web_media*, the zone's PlaybackID or DeviceID on pause_play, stop_play and playback_status; announce has more).
        const zoned = ['pause_play', 'stop_play', 'playback_status'].includes(op.name);
        if (!op.beyondSpec)
          expect(p.required).toBe(
            p.name !== 'Priority' && p.name !== 'Voice' && p.name !== 'StartAt' && !(zoned && ['PlaybackID', 'DeviceID'].includes(p.name)),
          );
      }
      expect(doc.responses['200']).toBeDefined();
    }
    expect(r.body.components.schemas.Error.required).toEqual(['Result', 'ErrorCode', 'ErrorMessage']);
  });

  test('/openapi.json is public too, also with a wrong token', async () => {
    const r = await httpGet(`${h.base}/openapi.json`, { Authorization: 'Bearer wrong' });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body.paths)).toHaveLength(OPERATIONS.length);
  });
});
