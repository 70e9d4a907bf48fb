import { OPERATIONS } from '../../src/operations/table';

/** Flow JSON builders for the end-to-end suites (deployed through the admin API). */

export const TAB = { id: 'tab1', type: 'tab', label: 'SpeakerHub tests' };

export function remoteConfig(id: string, url: string, token: string): object {
  return { id, type: 'speakerhub-config', name: 'remote hub', mode: 'remote', url, credentials: { token } };
}

export function embeddedConfig(id: string, restPort: number, token: string, extra: Record<string, unknown> = {}): object {
  return {
    id,
    type: 'speakerhub-config',
    name: 'embedded hub',
    mode: 'embedded',
    drivers: 'virtual',
    virtualCount: 3,
    samples: true,
    ttsProvider: 'espeak',
    restEnabled: true,
    restHost: '127.0.0.1',
    restPort,
    logLevel: 'warn',
    credentials: { token },
    ...extra,
  };
}

let n = 0;
const id = (p: string) => `${p}${++n}`;

/** http-in GET /<path> → node → http response. */
function httpRoute(path: string, node: Record<string, unknown>): object[] {
  const inId = id('in');
  const nodeId = (node.id as string) ?? id('n');
  const outId = id('out');
  return [
    { id: inId, type: 'http in', z: 'tab1', url: `/${path}`, method: 'get', upload: false, wires: [[nodeId]] },
    { ...node, id: nodeId, z: 'tab1', wires: [[outId]] },
    { id: outId, type: 'http response', z: 'tab1', statusCode: '', headers: {}, wires: [] },
  ];
}

function fn(code: string, wires: string[][] = [[]]): Record<string, unknown> {
  return { id: id('fn'), type: 'function', z: 'tab1', func: code, outputs: 1, wires };
}

/**
 * An events node recording into global context, read by GET /api/events. Every entry carries
 * `mark`: global context outlives a deploy, so a test tells this deploy's recordings (events
 * its own config node's stream delivered) from an earlier flow's by a mark of its own.
 */
export function eventRecorder(cfgId: string, mark = ''): object[] {
  const rec = fn(
    `const l = global.get('events') || []; l.push({ mark: ${JSON.stringify(mark)}, topic: msg.topic, payload: msg.payload }); if (l.length > 2000) l.shift(); global.set('events', l); return null;`,
  );
  return [
    { id: id('ev'), type: 'speakerhub-events', z: 'tab1', hub: cfgId, topics: [], wires: [[rec.id]] },
    rec,
    ...httpRoute('events', fn("msg.payload = global.get('events') || []; return msg;")),
  ];
}

/**
 * The whole test flow for one config node: an http-in → operation node → http-response
 * route for EVERY operation of the table (GET /api/sh/<operation>), a catch node answering
 * errors with their code, the events node recording into global context (GET /api/events),
 * the announce node (GET /api/announce?Text=…), and a memory probe (GET /api/probe).
 */
export function testFlow(config: object, options: { recorder?: boolean } = {}): object[] {
  const cfgId = (config as { id: string }).id;
  const flows: object[] = [TAB, config];
  for (const op of OPERATIONS) flows.push(...httpRoute(`sh/${op.name}`, { type: `speakerhub-${op.name}`, hub: cfgId, name: '' }));
  const errOut = id('out');
  const errFn = fn(
    'msg.statusCode = 500; msg.payload = { caught: true, code: msg.error.code, message: msg.error.message, source: msg.error.source && msg.error.source.type }; return msg;',
    [[errOut]],
  );
  flows.push({ id: id('catch'), type: 'catch', z: 'tab1', scope: null, uncaught: false, wires: [[errFn.id]] }, errFn, {
    id: errOut,
    type: 'http response',
    z: 'tab1',
    statusCode: '',
    headers: {},
    wires: [],
  });
  if (options.recorder === false) flows.push({ id: id('ev'), type: 'speakerhub-events', z: 'tab1', hub: cfgId, topics: [], wires: [[]] });
  else flows.push(...eventRecorder(cfgId));
  flows.push(...httpRoute('announce', { type: 'speakerhub-announce', hub: cfgId, targets: [], volume: '30' }));
  // The universal node with its error output: the operation from ?op=…, a failure answered by the flow (422).
  const [uIn, uSet, uNode, uOk, uBadFn, uBad] = [id('in'), id('fn'), id('u'), id('out'), id('fn'), id('out')];
  flows.push(
    { id: uIn, type: 'http in', z: 'tab1', url: '/universal', method: 'get', upload: false, wires: [[uSet]] },
    { id: uSet, type: 'function', z: 'tab1', func: 'msg.topic = msg.payload.op; delete msg.payload.op; return msg;', outputs: 1, wires: [[uNode]] },
    { id: uNode, type: 'speakerhub', z: 'tab1', hub: cfgId, operation: '', errorOutput: true, outputs: 2, wires: [[uOk], [uBadFn]] },
    { id: uOk, type: 'http response', z: 'tab1', statusCode: '', headers: {}, wires: [] },
    { id: uBadFn, type: 'function', z: 'tab1', func: 'msg.statusCode = 422; return msg;', outputs: 1, wires: [[uBad]] },
    { id: uBad, type: 'http response', z: 'tab1', statusCode: '', headers: {}, wires: [] },
  );
  flows.push(...httpRoute('probe', fn("msg.payload = global.get('probe')(); return msg;")));
  return flows;
}
