import { randomUUID } from 'node:crypto';
import type { Clock } from '../../core/clock';
import { first, type Database } from '../storage/database';
import { digest, newSecret } from '../secrets';
import { ACCESS_TOKEN_LIFETIME_S, REFRESH_TOKEN_LIFETIME_S } from './lifetimes';

export interface IssuedTokens {
  accessToken: string;
  refreshToken: string;
  accessExpiresAt: number;
  refreshExpiresAt: number;
  familyId: string;
}

export interface StoredRefreshToken {
  familyId: string;
  userId: string;
  clientId: string;
  expiresAt: number;
}

export interface AccessGrant {
  userId: string;
  clientId: string;
  expiresAt: number;
}

/** A refresh in a family revoked meanwhile (a concurrent refresh, a replay): the grant is invalid. */
export class FamilyRevokedError extends Error {
  constructor() {
    super('token family revoked');
    this.name = 'FamilyRevokedError';
  }
}

/**
 * Access and refresh tokens, stored as digests. Tokens descend from one grant (a password
 * sign-in or an authorization code) in a *family*; each refresh marks the presented token
 * used and issues the next pair in the same family, revoking the family's older access
 * tokens. Presenting a used refresh token again means it leaked (RFC 9700 §4.14.2): the
 * whole family is revoked, so neither the thief nor the victim keeps access.
 */
export class TokenStore {
  /** Access-token lookups are the hot path of every forwarded request; revocations evict. */
  private readonly cache = new Map<string, AccessGrant & { familyId: string }>();
  private static readonly CACHE_MAX = 10_000;
  /** Bumped by every eviction: a lookup that raced one does not cache what it read. */
  private generation = 0;
  /**
   * Off while the cluster's revocation messages cannot arrive (Redis unreachable): every
   * request then looks its token up in the database, so no instance honours a revoked token.
   */
  cacheEnabled = true;
  /** Told when a family's access tokens are dropped here (the cluster tells every other instance). */
  onFamilyDropped?: (familyId: string) => void;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  /**
   * A new pair; in a new family unless familyId (a refresh) is given. newFamilyId names the
   * new family (an authorization code records it before the tokens exist).
   */
  async issue(userId: string, clientId: string, familyId?: string, newFamilyId?: string): Promise<IssuedTokens> {
    const now = this.clock.now();
    const t: IssuedTokens = {
      accessToken: newSecret(),
      refreshToken: newSecret(),
      accessExpiresAt: now + ACCESS_TOKEN_LIFETIME_S * 1000,
      refreshExpiresAt: now + REFRESH_TOKEN_LIFETIME_S * 1000,
      familyId: familyId ?? newFamilyId ?? randomUUID(),
    };
    await this.db.transaction(async (q) => {
      if (familyId) {
        const fam = await first<{ revoked: number }>(q, 'SELECT revoked FROM token_families WHERE id = $1', [familyId]);
        if (!fam || Number(fam.revoked)) throw new FamilyRevokedError();
        await this.dropAccessTokens(q, familyId);
      } else {
        await q.run('INSERT INTO token_families (id, user_id, client_id, revoked, created_at) VALUES ($1, $2, $3, 0, $4)', [
          t.familyId,
          userId,
          clientId,
          now,
        ]);
      }
      await q.run('INSERT INTO access_tokens (token_hash, family_id, user_id, client_id, expires_at) VALUES ($1, $2, $3, $4, $5)', [
        digest(t.accessToken),
        t.familyId,
        userId,
        clientId,
        t.accessExpiresAt,
      ]);
      await q.run('INSERT INTO refresh_tokens (token_hash, family_id, user_id, client_id, expires_at, used) VALUES ($1, $2, $3, $4, $5, 0)', [
        digest(t.refreshToken),
        t.familyId,
        userId,
        clientId,
        t.refreshExpiresAt,
      ]);
    });
    if (familyId) this.dropped(familyId);
    return t;
  }

  /**
   * The grant behind a bearer token when it is in the cache (the relay's fast path):
   * undefined means "look it up" (access()), null means "known and expired".
   */
  cachedAccess(token: string): AccessGrant | null | undefined {
    if (!this.cacheEnabled) return undefined;
    const grant = this.cache.get(digest(token));
    if (!grant) return undefined;
    return grant.expiresAt > this.clock.now() ? grant : null;
  }

  /** The grant behind a bearer token, if it is live. */
  async access(token: string): Promise<AccessGrant | undefined> {
    const key = digest(token);
    let grant = this.cacheEnabled ? this.cache.get(key) : undefined;
    if (!grant) {
      const generation = this.generation;
      const row = await first<{ user_id: string; client_id: string; expires_at: number; family_id: string }>(
        this.db,
        'SELECT user_id, client_id, expires_at, family_id FROM access_tokens WHERE token_hash = $1',
        [key],
      );
      if (!row) return undefined;
      grant = { userId: row.user_id, clientId: row.client_id, expiresAt: Number(row.expires_at), familyId: row.family_id };
      if (this.cacheEnabled && generation === this.generation) {
        if (this.cache.size >= TokenStore.CACHE_MAX) this.cache.delete(this.cache.keys().next().value as string);
        this.cache.set(key, grant);
      }
    }
    if (grant.expiresAt <= this.clock.now()) return undefined;
    return grant;
  }

  /**
   * A refresh token that may be exchanged. A token already used (or one of a revoked
   * family) revokes its family and is refused.
   */
  async refresh(token: string): Promise<StoredRefreshToken | undefined> {
    const row = await first<{ family_id: string; user_id: string; client_id: string; expires_at: number; used: number; revoked: number }>(
      this.db,
      'SELECT r.family_id, r.user_id, r.client_id, r.expires_at, r.used, f.revoked FROM refresh_tokens r JOIN token_families f ON f.id = r.family_id WHERE r.token_hash = $1',
      [digest(token)],
    );
    if (!row) return undefined;
    if (Number(row.used) || Number(row.revoked)) {
      await this.revokeFamily(row.family_id);
      return undefined;
    }
    // Expiry is judged by the caller (the OAuth library reports "expired" rather than "invalid").
    return { familyId: row.family_id, userId: row.user_id, clientId: row.client_id, expiresAt: Number(row.expires_at) };
  }

  /** Marks a refresh token used; false if it already was (a concurrent reuse: the family is revoked). */
  async useRefresh(token: string): Promise<boolean> {
    const changed = await this.db.run('UPDATE refresh_tokens SET used = 1 WHERE token_hash = $1 AND used = 0', [digest(token)]);
    if (changed) return true;
    const row = await first<{ family_id: string }>(this.db, 'SELECT family_id FROM refresh_tokens WHERE token_hash = $1', [digest(token)]);
    if (row) await this.revokeFamily(row.family_id);
    return false;
  }

  async revokeFamily(familyId: string): Promise<void> {
    await this.db.transaction(async (q) => {
      await q.run('UPDATE token_families SET revoked = 1 WHERE id = $1', [familyId]);
      await q.run('UPDATE refresh_tokens SET used = 1 WHERE family_id = $1', [familyId]);
      await this.dropAccessTokens(q, familyId);
    });
    this.dropped(familyId);
  }

  /** Forgets the cached access tokens of a family (revoked or rotated, here or on another instance). */
  evictFamily(familyId: string): void {
    this.generation++;
    for (const [k, g] of this.cache) if (g.familyId === familyId) this.cache.delete(k);
  }

  /** Forgets every cached token (after missing revocation messages). */
  clearCache(): void {
    this.generation++;
    this.cache.clear();
  }

  private async dropAccessTokens(q: Pick<Database, 'run'>, familyId: string): Promise<void> {
    await q.run('DELETE FROM access_tokens WHERE family_id = $1', [familyId]);
    this.evictFamily(familyId);
  }

  /** After the commit (not before: another instance must not re-read the rows still there). */
  private dropped(familyId: string): void {
    this.evictFamily(familyId);
    this.onFamilyDropped?.(familyId);
  }
}
