import { readFile } from 'node:fs/promises';
import { ConfigError, parseConfig, type HubConfig } from './schema';

/** Deep-merges plain objects; arrays and scalars in `over` replace those in `base`. */
export function mergeConfig(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) continue;
    const b = out[k];
    out[k] = isPlain(v) && isPlain(b) ? mergeConfig(b, v) : v;
  }
  return out;
}

function isPlain(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Reads a JSON config file (if given), applies overrides (CLI flags) and validates. */
export async function loadConfig(file: string | undefined, overrides: Record<string, unknown> = {}): Promise<HubConfig> {
  let fromFile: Record<string, unknown> = {};
  if (file) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (e) {
      throw new ConfigError([`${file}: cannot read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`]);
    }
    try {
      const parsed: unknown = JSON.parse(text);
      if (!isPlain(parsed)) throw new Error('the top level must be a JSON object');
      fromFile = parsed;
    } catch (e) {
      throw new ConfigError([`${file}: not valid JSON (${(e as Error).message})`]);
    }
  }
  return parseConfig(mergeConfig(fromFile, overrides));
}
