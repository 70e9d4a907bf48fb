import { homedir } from 'node:os';
import { z } from 'zod';
import { ConfigSchema } from '../hub-config';
import type { ConfigComments } from './config-comments';

/**
 * docs/configuration-reference.md, generated from the configuration schema itself (`npm run
 * docs`; test/docs.test.ts fails when the page is stale): every key path with its type, its
 * default and its description. Types, ranges and defaults come from the zod schema (through
 * its JSON Schema), descriptions from the comments above the zod properties
 * (src/docs/config-comments.ts), so neither can drift from the code.
 */

/** The JSON Schema nodes the configuration produces (z.toJSONSchema, input side). */
interface Node {
  type?: string;
  const?: unknown;
  enum?: unknown[];
  anyOf?: Node[];
  items?: Node;
  additionalProperties?: Node | boolean;
  properties?: Record<string, Node>;
  required?: string[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  format?: string;
  pattern?: string;
}

/** One row of the reference. */
export interface ConfigKey {
  path: string;
  type: string;
  default?: string;
  description?: string;
  /** A section (an object of further keys) rather than a value. */
  section: boolean;
}

/** Every key of the composed configuration, depth first in schema order. */
export function configKeys(comments: ConfigComments): ConfigKey[] {
  const root = z.toJSONSchema(ConfigSchema, { io: 'input', unrepresentable: 'any' }) as Node;
  const out: ConfigKey[] = [];
  const visit = (node: Node, path: string) => {
    for (const [name, child] of Object.entries(node.properties ?? {})) {
      const key = path ? `${path}.${name}` : name;
      const section = !!child.properties;
      out.push({ path: key, type: section ? 'section' : typeOf(child), default: defaultOf(child, section), description: comments.get(key), section });
      visit(child, key);
      // Arrays of objects (snapcast.servers): their entries' keys as `key[].name`.
      for (const item of alternatives(child.items)) if (item.properties) visit(item, `${key}[]`);
    }
  };
  visit(root, '');
  return out;
}

/** The keys that hold a value but have no description: `npm run docs` warns, the test fails. */
export function undocumentedKeys(keys: readonly ConfigKey[]): string[] {
  return keys.filter((k) => !k.section && !k.description).map((k) => k.path);
}

const alternatives = (node: Node | undefined): Node[] => (!node ? [] : node.anyOf ? node.anyOf.flatMap(alternatives) : [node]);

/** A compact type: `integer 0–65535`, `"auto" | "json"`, `array of string`, `URL`. */
function typeOf(node: Node): string {
  if (node.anyOf) return node.anyOf.map(typeOf).join(' or ');
  if (node.const !== undefined) return JSON.stringify(node.const);
  if (node.enum) return node.enum.map((v) => JSON.stringify(v)).join(' | ');
  if (node.properties) return 'object';
  if (node.type === 'array') {
    const items = node.items ? typeOf(node.items) : 'any';
    return `array of ${items}${node.minItems ? ` (at least ${node.minItems})` : ''}`;
  }
  // A record (esphome.areas): its values' type.
  if (node.type === 'object') return typeof node.additionalProperties === 'object' ? `map of ${typeOf(node.additionalProperties)}` : 'object';
  if (node.type === 'string') {
    if (node.format === 'uri') return 'URL';
    const limits = [node.minLength && node.minLength > 1 ? `at least ${node.minLength} characters` : '', node.maxLength ? `at most ${node.maxLength}` : '']
      .filter(Boolean)
      .join(', ');
    const pattern = node.pattern ? ` matching \`${node.pattern}\`` : '';
    return `string${limits ? ` (${limits})` : ''}${pattern}`;
  }
  if (node.type === 'integer' || node.type === 'number') return `${node.type}${range(node)}`;
  return node.type ?? 'any';
}

/** `0–65535`, `> 0`, `≥ 50`, `≤ 3600`, `> 0, ≤ 3600`. */
function range(node: Node): string {
  // zod's .int() without a bound reports the safe-integer limit: no bound to a reader.
  const bound = (n: number | undefined) => (n === undefined || Math.abs(n) >= Number.MAX_SAFE_INTEGER ? undefined : n);
  const low = bound(node.minimum);
  const high = bound(node.maximum);
  if (low !== undefined && high !== undefined) return low < 0 ? ` from ${num(low)} to ${num(high)}` : ` ${num(low)}–${num(high)}`;
  const parts = [
    low !== undefined ? `≥ ${num(low)}` : '',
    node.exclusiveMinimum !== undefined ? `> ${num(node.exclusiveMinimum)}` : '',
    high !== undefined ? `≤ ${num(high)}` : '',
    node.exclusiveMaximum !== undefined ? `< ${num(node.exclusiveMaximum)}` : '',
  ].filter(Boolean);
  return parts.length ? ` ${parts.join(', ')}` : '';
}

/** Big bounds with thousands separators, as the prose pages write them (65535 stays: a port). */
const num = (n: number) => (Math.abs(n) >= 100_000 && Number.isInteger(n) ? n.toLocaleString('en-US') : String(n));

/** The default as JSON, with the machine's home folder written `~` (the page is the same on every machine). */
function defaultOf(node: Node, section: boolean): string | undefined {
  if (section || node.default === undefined) return undefined;
  const home = homedir();
  return JSON.stringify(node.default, (_k, v: unknown) => (typeof v === 'string' && home && v.startsWith(home) ? `~${v.slice(home.length)}` : v));
}

/** Markdown table cells: one line, no bare `|`. */
const cell = (text: string) => text.replace(/\s+/g, ' ').replace(/\|/g, '\\|');

/** The whole page. */
export function configReferenceMarkdown(keys: readonly ConfigKey[]): string {
  const out = [
    '# Configuration reference',
    '',
    '<!-- Generated by `npm run docs` from the configuration schema (src/docs/config-reference.ts): edit the',
    '     comments above the zod properties, not this page. test/docs.test.ts fails when it is stale. -->',
    '',
    'Every key of the configuration file (`speakerhub.json`), generated from the schema the hub',
    'validates it with: its type (values, ranges), its default and what it does. Key paths are',
    'dotted (`server.port` is `{"server": {"port": 8090}}`); `[]` marks the entries of a list',
    '(`snapcast.servers[].address`). Every key is also a `SPEAKERHUB_*` environment variable, and',
    'many have a flag: see [Configuration](configuration.md), which also explains how the layers',
    'combine and shows an example file. A key without a default is unset unless given.',
    '',
  ];
  const topLevel = keys.filter((k) => !k.path.includes('.') && !k.path.includes('['));
  const loose = topLevel.filter((k) => !k.section);
  if (loose.length) out.push('## Top-level keys', '', ...table(loose), '');
  for (const section of topLevel.filter((k) => k.section)) {
    // Nested sections keep a row: their description (tts.festival) says what their keys are for.
    const rows = keys.filter((k) => k.path.startsWith(`${section.path}.`) || k.path.startsWith(`${section.path}[]`));
    out.push(`## \`${section.path}\``, '');
    if (section.description) out.push(section.description, '');
    out.push(...table(rows), '');
  }
  return `${out.join('\n').trimEnd()}\n`;
}

function table(rows: readonly ConfigKey[]): string[] {
  return [
    '| Key | Type | Default | Description |',
    '|---|---|---|---|',
    ...rows.map((k) => `| \`${k.path}\` | ${cell(k.type)} | ${k.default === undefined ? '' : `\`${cell(k.default)}\``} | ${cell(k.description ?? '')} |`),
  ];
}
