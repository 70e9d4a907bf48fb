import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sameString } from '../util/constant-time';

/**
 * Bearer-token check in constant time. The canonical header `Bearer <token>` (what clients
 * send) is compared character by character when its length matches (the token's length is no
 * secret); any other spelling is hashed on both sides to equal length first.
 */
export class BearerAuth {
  private digest!: Buffer;
  /** `Bearer <token>` as its UTF-8 bytes one per character: how Node hands over a header (latin1). */
  private canonical!: string;

  constructor(token: string) {
    this.replace(token);
  }

  /** Switches to a new token (a rotated token file, reloaded on SIGHUP); the old one stops working at once. */
  replace(token: string): void {
    this.digest = sha256(token);
    this.canonical = Buffer.from(`Bearer ${token}`, 'utf8').toString('latin1');
  }

  /** True when the Authorization header (or, for EventSource clients, a query token) matches. */
  check(authorization: string | undefined, queryToken?: string): boolean {
    // The canonical spelling, compared as the strings they are (constant-time for equal lengths).
    if (authorization !== undefined && sameString(authorization, this.canonical)) return true;
    const m = authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization) : null;
    const given = m?.[1] ?? queryToken;
    if (!given) return false;
    return timingSafeEqual(sha256(given), this.digest);
  }
}

function sha256(s: string): Buffer {
  // One-shot hashing: a quarter of createHash()'s cost on this per-request path.
  return hash('sha256', s, 'buffer');
}

/** 256 random bits, URL-safe. */
export function generateToken(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * The local server's API token: the configured one, else the one generated on first start
 * and kept (mode 0600) in the data folder so clients keep working across restarts.
 */
export async function loadOrCreateToken(dataDir: string, configured?: string): Promise<{ token: string; generated: boolean }> {
  if (configured) return { token: configured, generated: false };
  const file = join(dataDir, 'api-token');
  try {
    const saved = (await readFile(file, 'utf8')).trim();
    if (saved.length >= 22) return { token: saved, generated: false };
  } catch {
    /* first start */
  }
  const token = generateToken();
  await mkdir(dataDir, { recursive: true });
  await writeFile(file, `${token}\n`, { mode: 0o600 });
  return { token, generated: true };
}
