import { readFile } from 'node:fs/promises';
import { configFromEnv } from './env';
import { ConfigError, parseConfig, type HubConfig } from '../hub-config';

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

export interface LoadOptions {
  /** Environment to read SPEAKERHUB_* keys from (default process.env; {} for none). */
  env?: NodeJS.ProcessEnv;
  /** Where override keys came from, e.g. { 'server.port': '--port' }, so errors name what the user typed. */
  labels?: Record<string, string>;
  /** Beneath the file: what the caller assumes when nothing else says (the CLI runs MQTT unless told not to). */
  defaults?: Record<string, unknown>;
}

/**
 * Names the source of each problem the user can fix: `--port (server.port): …`,
 * `SPEAKERHUB_SERVER_PORT (server.port): …`. Problems start with their key path.
 */
export function labelProblems(error: ConfigError, labels: Record<string, string>): ConfigError {
  const keys = Object.keys(labels).sort((a, b) => b.length - a.length);
  return new ConfigError(
    error.problems.map((p) => {
      const key = keys.find((k) => p.startsWith(k) && /^[:.[]/.test(p.slice(k.length)));
      return key ? `${labels[key]} (${p.slice(0, p.indexOf(':'))})${p.slice(p.indexOf(':'))}` : p;
    }),
  );
}

/**
 * Reads the caller's defaults, then a JSON config file (if given), then SPEAKERHUB_*
 * environment variables, then the overrides (CLI flags), each over the one before, and validates.
 */
export async function loadConfig(file: string | undefined, overrides: Record<string, unknown> = {}, options: LoadOptions = {}): Promise<HubConfig> {
  let fromFile: Record<string, unknown> = {};
  if (file) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
      // Windows editors save UTF-8 with a byte order mark, which JSON.parse refuses.
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
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
  const env = configFromEnv(options.env ?? process.env);
  if (env.problems.length) throw new ConfigError(env.problems);
  const labels = { ...(file ? labelsFor(fromFile, file) : {}), ...env.labels, ...(options.labels ?? {}) };
  try {
    return parseConfig(mergeConfig(mergeConfig(mergeConfig(options.defaults ?? {}, fromFile), env.config), overrides));
  } catch (e) {
    throw e instanceof ConfigError ? labelProblems(e, labels) : e;
  }
}

/** Problems in keys that came from the file are labelled with the file's name. */
function labelsFor(config: Record<string, unknown>, file: string, prefix = ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(config)) {
    const path = prefix ? `${prefix}.${k}` : k;
    if (isPlain(v)) Object.assign(out, labelsFor(v, file, path));
    out[path] = file;
  }
  return out;
}
