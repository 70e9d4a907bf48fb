import { randomBytes } from 'node:crypto';
import { first, type Database } from '../storage/database';
import { digest, newSecret, sameDigest } from '../secrets';
import { AccountError } from './accounts';

export interface OAuthClient {
  id: string;
  name: string;
  redirectUris: string[];
  /** Public clients (the browser client) have no secret and must use PKCE. */
  isPublic: boolean;
  ownerId: string | null;
}

/** The sample browser client the cloud serves at `/`: public, PKCE, registered at every start. */
export const WEB_CLIENT_ID = 'speakerhub-web';

/** An absolute http(s) URI without a fragment (RFC 6749 §3.1.2). */
export function checkRedirectUri(uri: string): string {
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    throw new AccountError('invalid_field', `redirect URI "${uri}" is not an absolute URL.`, 'redirect_uri');
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:')
    throw new AccountError('invalid_field', `redirect URI "${uri}" must use http or https.`, 'redirect_uri');
  if (u.hash || uri.includes('#')) throw new AccountError('invalid_field', `redirect URI "${uri}" must not contain a fragment (#).`, 'redirect_uri');
  return uri;
}

interface ClientRow {
  id: string;
  secret_hash: string | null;
  name: string;
  redirect_uris: string;
  owner_id: string | null;
  [k: string]: string | number | null;
}

export class Clients {
  constructor(private readonly db: Database) {}

  /** Registers a confidential client; the secret is shown once and only its digest kept. */
  async register(input: { name: string; redirectUris: string[]; ownerId?: string }): Promise<{ client_id: string; client_secret: string }> {
    const name = input.name.trim();
    if (!name || name.length > 100) throw new AccountError('invalid_field', 'name must be 1–100 characters.', 'name');
    if (!input.redirectUris.length) throw new AccountError('invalid_field', 'at least one redirect URI is required.', 'redirect_uri');
    if (input.redirectUris.length > 10) throw new AccountError('invalid_field', 'at most 10 redirect URIs.', 'redirect_uri');
    const uris = input.redirectUris.map(checkRedirectUri);
    const id = randomBytes(12).toString('hex');
    const secret = newSecret();
    await this.db.run('INSERT INTO clients (id, secret_hash, name, redirect_uris, owner_id, created_at) VALUES ($1, $2, $3, $4, $5, $6)', [
      id,
      digest(secret),
      name,
      JSON.stringify(uris),
      input.ownerId ?? null,
      Date.now(),
    ]);
    return { client_id: id, client_secret: secret };
  }

  /** (Re)registers the public browser client for the cloud's public URL. */
  async registerWebClient(redirectUri: string): Promise<void> {
    // One upsert, not delete-then-insert: instances of a cluster starting together all run this.
    await this.db.run(
      `INSERT INTO clients (id, secret_hash, name, redirect_uris, owner_id, created_at) VALUES ($1, NULL, $2, $3, NULL, $4)
       ON CONFLICT (id) DO UPDATE SET secret_hash = NULL, name = excluded.name, redirect_uris = excluded.redirect_uris, owner_id = NULL`,
      [WEB_CLIENT_ID, 'SpeakerHub web client', JSON.stringify([redirectUri]), Date.now()],
    );
  }

  /**
   * The client, if the id exists and the secret (when one is given) is right. A
   * confidential client presenting no secret is only found for PKCE exchanges and for
   * the authorization page, where the caller checks what it needs.
   */
  async find(id: string, secret?: string): Promise<OAuthClient | undefined> {
    const row = await first<ClientRow>(this.db, 'SELECT id, secret_hash, name, redirect_uris, owner_id FROM clients WHERE id = $1', [id]);
    if (!row) return undefined;
    if (secret !== undefined && (!row.secret_hash || !sameDigest(digest(secret), row.secret_hash))) return undefined;
    return { id: row.id, name: row.name, redirectUris: JSON.parse(row.redirect_uris) as string[], isPublic: !row.secret_hash, ownerId: row.owner_id };
  }

  async ownedBy(userId: string): Promise<OAuthClient[]> {
    const rows = await this.db.all<ClientRow>(
      'SELECT id, secret_hash, name, redirect_uris, owner_id FROM clients WHERE owner_id = $1 ORDER BY created_at',
      [userId],
    );
    return rows.map((row) => ({
      id: row.id,
      name: row.name,
      redirectUris: JSON.parse(row.redirect_uris) as string[],
      isPublic: !row.secret_hash,
      ownerId: row.owner_id,
    }));
  }
}
