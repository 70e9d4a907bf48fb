import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The hub's cloud credential, kept in its data folder (mode 0600) by `speakerhub account
 * signin` and read by `speakerhub hub --cloud <url>`: the cloud's origin, the username and
 * the link token (never the password).
 */
export interface LinkCredential {
  cloud: string;
  username: string;
  linkToken: string;
}

export const CREDENTIAL_FILE = 'cloud-link.json';

/** `<url>` is always the cloud's origin; paths and trailing slashes are dropped. */
export function cloudOrigin(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`--cloud must be the cloud's URL (https://cloud.example.org), not "${url}".`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`--cloud must be an http or https URL, not "${url}".`);
  return u.origin;
}

export async function readCredential(dataDir: string): Promise<LinkCredential | undefined> {
  try {
    const c = JSON.parse(await readFile(join(dataDir, CREDENTIAL_FILE), 'utf8')) as Partial<LinkCredential>;
    return c.cloud && c.username && c.linkToken ? (c as LinkCredential) : undefined;
  } catch {
    return undefined;
  }
}

export async function saveCredential(dataDir: string, c: LinkCredential): Promise<void> {
  await mkdir(dataDir, { recursive: true });
  const file = join(dataDir, CREDENTIAL_FILE);
  await writeFile(`${file}.tmp`, `${JSON.stringify(c, null, 2)}\n`, { mode: 0o600 });
  await rename(`${file}.tmp`, file);
}

/** An account request the cloud refused, with its message (shown to the user as is). */
export class CloudAccountError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'CloudAccountError';
  }
}

async function postJson(url: string, body: unknown): Promise<Record<string, string>> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
  } catch (e) {
    throw new CloudAccountError(0, 'unreachable', `Cannot reach the cloud at ${new URL(url).origin}: ${(e as Error).message}.`);
  }
  const json = (await res.json().catch(() => ({}))) as Record<string, string>;
  if (!res.ok) throw new CloudAccountError(res.status, json.error ?? 'error', json.error_description ?? `The cloud answered HTTP ${res.status}.`);
  return json;
}

export async function cloudSignup(cloud: string, username: string, email: string, password: string): Promise<void> {
  await postJson(`${cloudOrigin(cloud)}/api/account/signup`, { username, email, password });
}

/**
 * Signs in and returns a fresh link token; with `revokeOthers` every other link token of the
 * account stops working (and their links close): `revoked` says how many there were.
 */
export async function cloudSignin(
  cloud: string,
  username: string,
  password: string,
  o: { revokeOthers?: boolean } = {},
): Promise<LinkCredential & { revoked?: number }> {
  const origin = cloudOrigin(cloud);
  const r = await postJson(`${origin}/api/account/signin`, { username, password, ...(o.revokeOthers ? { revoke_other_links: true } : {}) });
  const cred: LinkCredential & { revoked?: number } = { cloud: origin, username: r.username, linkToken: r.link_token };
  if (o.revokeOthers) cred.revoked = Number(r.revoked_link_tokens ?? 0);
  return cred;
}

/** A password file's content; one trailing newline (as editors and `echo` leave) is not part of it. */
export async function readPasswordFile(file: string): Promise<string> {
  const text = await readFile(file, 'utf8');
  return text.replace(/\r?\n$/, '');
}
