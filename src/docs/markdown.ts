import { z } from 'zod';
import { ERROR_CODES } from '../core/errors';
import { OPERATIONS, parameterNames, type Operation } from '../operations/table';

/**
 * README sections generated from the operation table and the error codes, so the docs can
 * never list an operation the hub does not have (test/docs.test.ts keeps README in step).
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
};

export function operationsMarkdown(): string {
  const out: string[] = [`All ${OPERATIONS.length} operations: \`GET {base}/api/v1/<operation>?<parameters>\` with \`Authorization: Bearer <token>\`.`, ''];
  for (const group of Object.keys(GROUP_TITLES) as Operation['group'][]) {
    out.push(`#### ${GROUP_TITLES[group]}`, '', '| Operation | Parameters | Response | What it does |', '|---|---|---|---|');
    for (const op of OPERATIONS.filter((o) => o.group === group)) {
      const params = parameterNames(op)
        .map((p) => (p === 'Priority' ? '[Priority]' : p))
        .join(', ');
      out.push(`| \`${op.name}\` | ${params || '—'} | \`${responseShape(op)}\` | ${op.summary} |`);
    }
    out.push('');
  }
  out.push('Examples (with `T` the API token and `S` a SessionToken):', '', '```sh');
  out.push('curl -s -H "Authorization: Bearer $T" "http://127.0.0.1:8090/api/v1/init_session"');
  for (const op of OPERATIONS.filter((o) => o.needsSession)) {
    const qs = [`SessionToken=$S`, ...Object.entries(op.example).map(([k, v]) => `${k}=${encodeURIComponent(v)}`)].join('&');
    out.push(`curl -s -H "Authorization: Bearer $T" "http://127.0.0.1:8090/api/v1/${op.name}?${qs}"`);
  }
  out.push('```');
  return out.join('\n');
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

/** Replaces each generated section of a README text. */
export function renderReadme(readme: string): string {
  let text = readme;
  for (const [key, [open, close]] of Object.entries(MARKERS)) {
    const body = key === 'operations' ? operationsMarkdown() : errorCodesMarkdown();
    const start = text.indexOf(open);
    const end = text.indexOf(close);
    if (start < 0 || end < start) throw new Error(`README lacks the ${open} … ${close} markers`);
    text = `${text.slice(0, start + open.length)}\n${body}\n${text.slice(end)}`;
  }
  return text;
}
