/**
 * The Home Assistant page's rest_command script (docs/home-assistant.md), run as HA would run it: its YAML read with
 * PyYAML, every template rendered with Jinja2 (HA's engine), each rest_command call made
 * against a real hub, each `if` evaluated. A session per run, the announcement, the close;
 * and an expired session is turned into an error, never mistaken for success.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { readDoc } from './helpers/docs';
import { TEST_TOKEN, startHub, type TestHub } from './helpers/hub';

const PAGE = readDoc('docs/home-assistant.md');
const PY = '/usr/bin/python3';

function block(): string {
  const at = PAGE.indexOf('**Over REST (`rest_command`), without MQTT.**');
  expect(at).toBeGreaterThan(0);
  // The page shows secrets.yaml first; the script is the block that defines the rest_command.
  const m = [...PAGE.slice(at).matchAll(/```yaml\n([\s\S]*?)```/g)].find((b) => b[1].includes('rest_command:'));
  return m![1];
}

function render(template: string, variables: Record<string, unknown>): string {
  const out = JSON.parse(
    execFileSync(PY, [path.join(__dirname, 'mqtt', 'render-jinja.py')], { input: JSON.stringify([{ template, variables }]) }).toString(),
  ) as (string | { error: string })[];
  if (typeof out[0] !== 'string') throw new Error(`template ${template} failed: ${out[0].error}`);
  return out[0];
}

interface Action {
  action?: string;
  data?: Record<string, string>;
  response_variable?: string;
  continue_on_error?: boolean;
  stop?: string;
  error?: boolean;
}
interface Step extends Action {
  if?: string;
  then?: Action[];
}

interface Run {
  /** The `stop` text that ended the run, as HA shows it (not a template: never rendered). */
  stopped?: string;
  /** Persistent notifications the run created: their rendered title and message. */
  notifications: { title: string; message: string }[];
  /** The operations called, in order. */
  calls: string[];
  /** Every call with its URL and HTTP status: HA logs the URL of one answered >= 400 at WARNING. */
  answered: { url: string; status: number }[];
}

let h: TestHub;
beforeAll(async () => {
  h = await startHub({ speakers: { virtual: { count: 2 } } });
});
afterAll(() => h?.close());

function script(): { rc: { url: string; headers: Record<string, string> }; sequence: Step[] } {
  const doc = JSON.parse(execFileSync(PY, [path.join(__dirname, 'helpers', 'ha-yaml.py')], { input: block() }).toString());
  return { rc: doc.rest_command.speakerhub, sequence: doc.script.speakerhub_announce.sequence as Step[] };
}

/** Runs the script's sequence as HA would: templates rendered in `data` and `if`, never in `stop`. */
async function runScript(text: string, tamper?: (operation: string, query: string) => string): Promise<Run> {
  const { rc, sequence } = script();
  expect(rc.headers.Authorization).toBe('!secret speakerhub_token');
  const vars: Record<string, unknown> = { text };
  const run: Run = { notifications: [], calls: [], answered: [] };
  const act = async (a: Action): Promise<boolean> => {
    if (a.stop !== undefined) {
      run.stopped = a.stop;
      return false;
    }
    const data = Object.fromEntries(Object.entries(a.data ?? {}).map(([k, v]) => [k, render(String(v), vars)]));
    if (a.action === 'persistent_notification.create') {
      run.notifications.push({ title: data.title, message: data.message });
      return true;
    }
    expect(a.action).toBe('rest_command.speakerhub');
    const query = tamper ? tamper(data.operation, data.query) : data.query;
    // The page's host stands for the hub's: only the origin is replaced.
    const url = render(rc.url, { ...data, query }).replace('http://192.168.1.20:8090', h.base);
    run.calls.push(data.operation);
    const res = await fetch(url, { headers: { Authorization: `Bearer ${TEST_TOKEN}` } });
    run.answered.push({ url, status: res.status });
    if (a.response_variable) vars[a.response_variable] = { status: res.status, content: await res.json() };
    else await res.arrayBuffer();
    return true;
  };
  for (const step of sequence) {
    if (step.if !== undefined) {
      if (render(step.if, vars).trim() !== 'True') continue;
      for (const a of step.then ?? []) if (!(await act(a))) return run;
    } else if (!(await act(step))) return run;
  }
  return run;
}

/** No call that carries a SessionToken got an HTTP error status (the URL HA would log at WARNING). */
function noSessionTokenLogged(run: Run): void {
  expect(run.answered.filter((a) => a.url.includes('SessionToken=') && a.status >= 400)).toEqual([]);
}

test('no stop text is a template (HA shows a stop text as written)', () => {
  const stops = script()
    .sequence.flatMap((s) => [s, ...(s.then ?? [])])
    .filter((a) => a.stop !== undefined);
  expect(stops.length).toBeGreaterThanOrEqual(3);
  for (const a of stops) {
    expect(a.stop).not.toMatch(/\{\{|\{%/);
    expect(a.error).toBe(true);
  }
});

test('a run opens a session, announces, closes it, and ends without error', async () => {
  const r = await runScript('Dinner is ready');
  expect(r.calls).toEqual(['init_session', 'announce', 'close_session']);
  expect(r.stopped).toBeUndefined();
  expect(r.notifications).toEqual([]);
  noSessionTokenLogged(r);
});

test('an expired session is an error the script raises, never a success: the notification names the code', async () => {
  const r = await runScript('Hello', (operation, query) =>
    operation === 'announce' ? query.replace(/SessionToken=[^&]+/, 'SessionToken=expired0000') : query,
  );
  expect(r.stopped).toBe('SpeakerHub refused the announcement (the notification says why)');
  expect(r.notifications).toHaveLength(1);
  expect(r.notifications[0].message).toMatch(/^SessionNotFound: \S/);
  expect(r.calls).toEqual(['init_session', 'announce', 'close_session']);
  noSessionTokenLogged(r);
});

test.each([
  ['empty', ''],
  ['blank', '   '],
  ['longer than tts.maxTextLength', 'x'.repeat(1001)],
])('a text the hub would refuse with HTTP 400 (%s) stops the script before any call', async (_what, text) => {
  const r = await runScript(text);
  expect(r.calls).toEqual([]);
  expect(r.stopped).toMatch(/^SpeakerHub: the text is empty or longer than 1000 characters/);
});

test('what the first step lets through is what the hub takes: the longest text gets no HTTP error', async () => {
  const r = await runScript('x'.repeat(1000));
  expect(r.calls).toEqual(['init_session', 'announce', 'close_session']);
  expect(r.stopped).toBeUndefined();
  noSessionTokenLogged(r);
});
