import { z } from 'zod';
import { ERROR_CODES } from '../core/errors';
import { OPERATIONS, parameterNames, type Operation } from '../operations/table';

/**
 * The sections of docs/rest-api.md generated from the operation table and the error codes, so
 * the docs can never list an operation the hub does not have (test/docs.test.ts keeps the page
 * in step; `npm run docs` rewrites it).
 */

export const MARKERS = {
  operations: ['<!-- generated:operations -->', '<!-- /generated:operations -->'],
  errors: ['<!-- generated:errors -->', '<!-- /generated:errors -->'],
} as const;

const GROUP_TITLES: Record<Operation['group'], string> = {
  session: 'Session management',
  device: 'Device management',
  playback: 'Media playback',
  volume: 'Volume control',
  announcement: 'Announcements (beyond the spec)',
};

export function operationsMarkdown(): string {
  const out: string[] = [`All ${OPERATIONS.length} operations: \`GET {base}/api/v1/<operation>?<parameters>\` with \`Authorization: Bearer <token>\`.`, ''];
  for (const group of Object.keys(GROUP_TITLES) as Operation['group'][]) {
    out.push(`### ${GROUP_TITLES[group]}`, '', '| Operation | Parameters | Response | What it does |', '|---|---|---|---|');
    for (const op of OPERATIONS.filter((o) => o.group === group)) {
      const params = parameterNames(op)
        .map((p) => (isOptional(op, p) ? `[${p}]` : p))
        .join(', ');
      out.push(`| \`${op.name}\` | ${params || '—'} | \`${responseShape(op)}\` | ${op.summary} |`);
    }
    out.push('');
  }
  out.push(
    'Examples: one per operation, in an order that runs as a script against a default hub (`npm start`: three virtual',
    'speakers, the sample tracks), with `T` the API token (`speakerhub token` prints it):',
    '',
    '```sh',
  );
  out.push(...exampleScript());
  out.push('```');
  return out.join('\n');
}

const curl = (op: Operation) => {
  // "$X" stays a shell variable: an earlier example's answer set it (exampleCaptures).
  const value = (v: string) => (/^\$[A-Z]$/.test(v) ? v : encodeURIComponent(v));
  const qs = [`SessionToken=$S`, ...Object.entries(op.example).map(([k, v]) => `${k}=${value(v)}`)].join('&');
  const cmd = `curl -s -H "Authorization: Bearer $T" "http://127.0.0.1:8090/api/v1/${op.name}?${qs}"`;
  const c = op.exampleCaptures;
  return c ? `${c.variable}=$(${cmd} | jq -r .${c.field})` : cmd;
};

/**
 * The examples as a script that runs as written (test/readme-examples.test.ts runs it):
 * every operation once, in table order, except that hub-media plays come after the other
 * plays so that each resume_* can follow a pause_play of hub media, and close_session ends it.
 */
function exampleScript(): string[] {
  const ops = OPERATIONS.filter((o) => o.needsSession && o.name !== 'close_session' && o.name !== 'pause_play');
  const isResume = (o: Operation) => o.name.startsWith('resume_');
  const isPlay = (o: Operation) => o.name.startsWith('play_');
  const plays = ops.filter(isPlay);
  const orderedPlays = [...plays.filter((o) => !o.name.startsWith('play_hub_media')), ...plays.filter((o) => o.name.startsWith('play_hub_media'))];
  const pause = OPERATIONS.find((o) => o.name === 'pause_play');
  const close = OPERATIONS.find((o) => o.name === 'close_session');
  const lines = ['S=$(curl -s -H "Authorization: Bearer $T" "http://127.0.0.1:8090/api/v1/init_session" | jq -r .SessionToken)'];
  let playsDone = false;
  for (const op of ops) {
    if (isResume(op)) continue;
    if (isPlay(op)) {
      if (playsDone) continue;
      playsDone = true;
      lines.push(...orderedPlays.map(curl));
      for (const r of ops.filter(isResume)) lines.push(...(pause ? [curl(pause)] : []), curl(r));
      continue;
    }
    lines.push(curl(op));
  }
  if (close) lines.push(curl(close));
  return lines;
}

export function errorCodesMarkdown(): string {
  const rows = Object.entries(ERROR_CODES).map(([code, e]) => `| \`${code}\` | ${e.status} | ${e.description} |`);
  return ['| ErrorCode | HTTP status | Meaning |', '|---|---|---|', ...rows].join('\n');
}

/** A compact picture of a response: field names with their JSON types. */
/** The response as a compact type, e.g. `{Result: "true"|"false"}` (also shown in the Node-RED help). */
export function responseShape(op: Operation): string {
  const schema = z.toJSONSchema(op.response, { unrepresentable: 'any' }) as { properties?: Record<string, { type?: string; enum?: string[]; items?: unknown }> };
  if (!schema.properties) return '{…}';
  const fields = Object.entries(schema.properties).map(([k, v]) => {
    if (v.type === 'array') return `${k}: [...]`;
    if (v.enum) return `${k}: ${v.enum.map((e) => JSON.stringify(e)).join('|')}`;
    return `${k}: ${v.type ?? 'any'}`;
  });
  return `{${fields.join(', ')}}`;
}

/** Replaces each generated section of a markdown text (docs/rest-api.md). */
export function renderReadme(readme: string): string {
  let text = readme;
  for (const [key, [open, close]] of Object.entries(MARKERS)) {
    const body = key === 'operations' ? operationsMarkdown() : errorCodesMarkdown();
    const start = text.indexOf(open);
    const end = text.indexOf(close);
    if (start < 0 || end < start) throw new Error(`the page lacks the ${open} … ${close} markers`);
    text = `${text.slice(0, start + open.length)}\n${body}\n${text.slice(end)}`;
  }
  return text;
}

/** Optional parameters are shown in brackets. */
function isOptional(op: Operation, name: string): boolean {
  const schema = (op.params.shape as Record<string, { safeParse(v: unknown): { success: boolean } }>)[name];
  return !!schema && schema.safeParse(undefined).success;
}
