import type { z } from 'zod';
import { parseInteger, unquote } from '../util/values';
import { ConfigSchema } from '../hub-config';

/**
 * Every configuration key can come from an environment variable: `SPEAKERHUB_` and the key
 * path in upper snake case (`server.port` → `SPEAKERHUB_SERVER_PORT`,
 * `sessions.maxSessions` → `SPEAKERHUB_SESSIONS_MAX_SESSIONS`). The list is derived from the
 * schema, so keys added later are covered without a table to keep in step.
 */

export interface ConfigKey {
  /** Dotted path, e.g. server.port */
  path: string;
  /** SPEAKERHUB_SERVER_PORT */
  env: string;
  kind: string;
  element?: string;
  /** Integer keys: their range, so a bad value gets the message its flag would give. */
  integer?: { min: number; max: number };
}

export function envName(path: string): string {
  return `SPEAKERHUB_${path
    .split('.')
    .map((p) => p.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase())
    .join('_')}`;
}

/** The leaves of the configuration schema. */
export function configKeys(schema: z.ZodType = ConfigSchema): ConfigKey[] {
  const out: ConfigKey[] = [];
  const walk = (s: z.ZodType, path: string[]) => {
    const def = (s as unknown as { _zod: { def: Record<string, unknown> & { type: string } } })._zod.def;
    switch (def.type) {
      case 'default':
      case 'prefault':
      case 'optional':
      case 'nullable':
      case 'readonly':
        return walk(def.innerType as z.ZodType, path);
      case 'pipe':
        return walk(def.in as z.ZodType, path);
      case 'object':
        for (const [k, v] of Object.entries(def.shape as Record<string, z.ZodType>)) walk(v, [...path, k]);
        return;
      default: {
        const p = path.join('.');
        const element = def.type === 'array' ? (def.element as { _zod: { def: { type: string } } })._zod.def.type : undefined;
        const n = s as unknown as { isInt?: boolean; minValue?: number | null; maxValue?: number | null };
        const integer =
          def.type === 'number' && n.isInt ? { min: n.minValue ?? Number.MIN_SAFE_INTEGER, max: n.maxValue ?? Number.MAX_SAFE_INTEGER } : undefined;
        out.push({ path: p, env: envName(p), kind: def.type, element, ...(integer ? { integer } : {}) });
      }
    }
  };
  walk(schema, []);
  return out;
}

const TRUE = new Set(['true', '1', 'yes', 'on']);
const FALSE = new Set(['false', '0', 'no', 'off']);

/** Turns an environment value into the key's JSON type; what cannot be converted is left as text for the schema to refuse by name. */
function convert(key: ConfigKey, raw: string): unknown {
  const v = unquote(raw);
  switch (key.kind) {
    case 'number':
      return /^[+-]?\d+(\.\d+)?$/.test(v) ? Number(v) : v;
    case 'boolean':
      return TRUE.has(v.toLowerCase()) ? true : FALSE.has(v.toLowerCase()) ? false : v;
    case 'array':
      if (v.startsWith('[')) {
        try {
          return JSON.parse(v);
        } catch {
          return v;
        }
      }
      // Comma-separated; folder lists may also use the platform's path separator (a:b).
      return v
        .split(key.path === 'media.folders' ? /[,:]/ : /,/)
        .map((s) => s.trim())
        .filter(Boolean);
    case 'string':
    case 'enum':
      return v;
    default:
      try {
        return JSON.parse(v);
      } catch {
        return v;
      }
  }
}

/**
 * The configuration the environment sets, and for each key the variable it came from. An
 * integer key's bad value is a problem worded as its flag's would be ("SPEAKERHUB_SERVER_PORT
 * (server.port) must be an integer from 0 to 65535 (got "abc")"), not a type error of the schema.
 */
export function configFromEnv(env: NodeJS.ProcessEnv = process.env): {
  config: Record<string, unknown>;
  labels: Record<string, string>;
  problems: string[];
} {
  const config: Record<string, unknown> = {};
  const labels: Record<string, string> = {};
  const problems: string[] = [];
  for (const key of configKeys()) {
    const raw = env[key.env];
    if (raw === undefined || raw === '') continue;
    if (key.integer) {
      const r = parseInteger(raw, `${key.env} (${key.path})`, key.integer.min, key.integer.max);
      if (!r.ok) {
        problems.push(`${r.message}.`);
        continue;
      }
    }
    const parts = key.path.split('.');
    let node = config;
    for (const p of parts.slice(0, -1)) node = (node[p] ??= {}) as Record<string, unknown>;
    node[parts[parts.length - 1]] = convert(key, raw);
    labels[key.path] = key.env;
  }
  return { config, labels, problems };
}
