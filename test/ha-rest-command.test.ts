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
  const m = /```yaml\n([\s\S]*?)```/.exec(PAGE.slice(at));
  return m![1];
}

function render(template: string, variables: Record<string, unknown>): string {
  const out = JSON.parse(
    execFileSync(PY, [path.join(__dirname, 'mqtt', 'render-jinja.py')], { input: JSON.stringify([{ template, variables }]) }).toString(),
  ) as (string | { error: string })[];
  if (typeof out[0] !== 'string') throw new Error(`template ${template} failed: ${out[0].error}`);
  return out[0];
}

interface Step {
  action?: string;
  data?: Record<string, string>;
  response_variable?: string;
  if?: string;
  then?: { stop: string; error: boolean }[];
}

let h: TestHub;
beforeAll(async () => {
  h = await startHub({ speakers: { virtual: { count: 2 } } });
});
afterAll(() => h?.close());

/** Runs the script's sequence; returns the error a `stop` step raised, if any. */
async function runScript(text: string, tamper?: (operation: string, query: string) => string): Promise<{ stopped?: string; calls: string[] }> {
  const doc = JSON.parse(execFileSync(PY, [path.join(__dirname, 'helpers', 'ha-yaml.py')], { input: block() }).toString());
  const rc = doc.rest_command.speakerhub;
  expect(rc.headers.Authorization).toBe('!secret speakerhub_token');
  const vars: Record<string, unknown> = { text };
  const calls: string[] = [];
  for (const step of doc.script.speakerhub_announce.sequence as Step[]) {
    if (step.action === 'rest_command.speakerhub') {
      const data = Object.fromEntries(Object.entries(step.data ?? {}).map(([k, v]) => [k, render(String(v), vars)]));
      const query = tamper ? tamper(data.operation, data.query) : data.query;
      // The page's host stands for the hub's: only the origin is replaced.
      const url = render(rc.url, { ...data, query }).replace('http://192.168.1.20:8090', h.base);
      calls.push(data.operation);
      const res = await fetch(url, { headers: { Authorization: `Bearer ${TEST_TOKEN}` } });
      if (step.response_variable) vars[step.response_variable] = { status: res.status, content: await res.json() };
      else await res.arrayBuffer();
    } else if (step.if !== undefined) {
      if (render(step.if, vars).trim() === 'True') return { stopped: render(step.then![0].stop, vars), calls };
    }
  }
  return { calls };
}

test('a run opens a session, announces, closes it, and ends without error', async () => {
  const r = await runScript('Dinner is ready');
  expect(r).toEqual({ calls: ['init_session', 'announce', 'close_session'] });
});

test('an expired session is an error the script raises, never a success', async () => {
  const r = await runScript('Hello', (operation, query) =>
    operation === 'announce' ? query.replace(/SessionToken=[^&]+/, 'SessionToken=expired0000') : query,
  );
  expect(r.stopped).toMatch(/^SpeakerHub refused: SessionNotFound /);
});
