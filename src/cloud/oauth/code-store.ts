import type { Clock } from '../../core/clock';
import { first, type Database } from '../storage/database';
import { digest } from '../secrets';
import { CODE_LIFETIME_S } from './lifetimes';

export interface StoredCode {
  /** Set once redeemed: the token family it started (a replay revokes it). */
  usedBy: string | null;
  clientId: string;
  userId: string;
  redirectUri: string;
  codeChallenge: string | null;
  codeChallengeMethod: string | null;
  expiresAt: number;
}

/**
 * Authorization codes (digests), single use: redeeming one marks it used with the token
 * family it starts; the row stays until it expires, so a replay is recognised.
 */
export class CodeStore {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  async save(code: string, c: Omit<StoredCode, 'expiresAt' | 'usedBy'>): Promise<number> {
    const expiresAt = this.clock.now() + CODE_LIFETIME_S * 1000;
    await this.db.run(
      'INSERT INTO auth_codes (code_hash, client_id, user_id, redirect_uri, code_challenge, code_challenge_method, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
      [digest(code), c.clientId, c.userId, c.redirectUri, c.codeChallenge, c.codeChallengeMethod, expiresAt],
    );
    return expiresAt;
  }

  async get(code: string): Promise<StoredCode | undefined> {
    const row = await first<{
      client_id: string;
      user_id: string;
      redirect_uri: string;
      code_challenge: string | null;
      code_challenge_method: string | null;
      expires_at: number;
      used: number;
      family_id: string | null;
    }>(
      this.db,
      'SELECT client_id, user_id, redirect_uri, code_challenge, code_challenge_method, expires_at, used, family_id FROM auth_codes WHERE code_hash = $1',
      [digest(code)],
    );
    if (!row) return undefined;
    return {
      clientId: row.client_id,
      userId: row.user_id,
      redirectUri: row.redirect_uri,
      codeChallenge: row.code_challenge,
      codeChallengeMethod: row.code_challenge_method,
      expiresAt: Number(row.expires_at),
      usedBy: Number(row.used) ? (row.family_id ?? '') : null,
    };
  }

  /** Redeems the code for the token family `familyId`; true only for the one caller that did. */
  async take(code: string, familyId: string): Promise<boolean> {
    return (await this.db.run('UPDATE auth_codes SET used = 1, family_id = $2 WHERE code_hash = $1 AND used = 0', [digest(code), familyId])) > 0;
  }
}
