import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface PubsubKeys {
  publishKey: string;
  subscribeKey: string;
  /** True when this start generated (and saved) at least one of them. */
  generated: boolean;
}

const FILE = 'pubsub-keys.json';

/** 192 random bits, URL-safe, with a prefix that tells the two keys apart on sight. */
export function generateKey(kind: 'pub' | 'sub'): string {
  return `${kind}-${randomBytes(24).toString('base64url')}`;
}

/**
 * The publish and subscribe keys: the configured ones, else those generated on first start
 * and kept (mode 0600) in the data folder, like the API token, so clients keep working.
 */
export async function loadOrCreateKeys(dataDir: string, configured: { publishKey?: string; subscribeKey?: string } = {}): Promise<PubsubKeys> {
  const file = join(dataDir, FILE);
  let saved: Partial<Record<'publishKey' | 'subscribeKey', unknown>> = {};
  try {
    saved = JSON.parse(await readFile(file, 'utf8')) as typeof saved;
  } catch {
    /* first start, or an unreadable file: new keys */
  }
  const valid = (v: unknown): v is string => typeof v === 'string' && v.length >= 16;
  let generated = false;
  const pick = (given: string | undefined, old: unknown, kind: 'pub' | 'sub'): string => {
    if (given) return given;
    if (valid(old)) return old;
    generated = true;
    return generateKey(kind);
  };
  const publishKey = pick(configured.publishKey, saved.publishKey, 'pub');
  const subscribeKey = pick(configured.subscribeKey, saved.subscribeKey, 'sub');
  if (generated) {
    // Only generated keys are stored: configured ones stay in the config alone.
    const store = {
      publishKey: configured.publishKey ? (valid(saved.publishKey) ? saved.publishKey : undefined) : publishKey,
      subscribeKey: configured.subscribeKey ? (valid(saved.subscribeKey) ? saved.subscribeKey : undefined) : subscribeKey,
    };
    await mkdir(dataDir, { recursive: true });
    await writeFile(file, `${JSON.stringify(store, null, 2)}\n`, { mode: 0o600 });
  }
  return { publishKey, subscribeKey, generated };
}
