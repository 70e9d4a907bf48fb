import type { Database } from './database';

/**
 * Schema versions, applied in order, each once, in a transaction of its own. Append new
 * ones; never edit one that has shipped. The SQL is the subset both SQLite and
 * PostgreSQL accept (BIGINT for epoch-ms times, INTEGER 0/1 for flags).
 */
export const MIGRATIONS: readonly string[] = [
  // 1: accounts, OAuth clients, codes, token families and tokens, hub link tokens, web sessions.
  `CREATE TABLE users (
     id TEXT PRIMARY KEY,
     username TEXT NOT NULL,
     username_key TEXT NOT NULL UNIQUE,
     email TEXT NOT NULL,
     password_hash TEXT NOT NULL,
     created_at BIGINT NOT NULL);
   CREATE TABLE clients (
     id TEXT PRIMARY KEY,
     secret_hash TEXT,
     name TEXT NOT NULL,
     redirect_uris TEXT NOT NULL,
     owner_id TEXT,
     created_at BIGINT NOT NULL);
   CREATE TABLE auth_codes (
     code_hash TEXT PRIMARY KEY,
     client_id TEXT NOT NULL,
     user_id TEXT NOT NULL,
     redirect_uri TEXT NOT NULL,
     code_challenge TEXT,
     code_challenge_method TEXT,
     expires_at BIGINT NOT NULL);
   CREATE TABLE token_families (
     id TEXT PRIMARY KEY,
     user_id TEXT NOT NULL,
     client_id TEXT NOT NULL,
     revoked INTEGER NOT NULL DEFAULT 0,
     created_at BIGINT NOT NULL);
   CREATE TABLE access_tokens (
     token_hash TEXT PRIMARY KEY,
     family_id TEXT NOT NULL,
     user_id TEXT NOT NULL,
     client_id TEXT NOT NULL,
     expires_at BIGINT NOT NULL);
   CREATE INDEX access_tokens_family ON access_tokens (family_id);
   CREATE TABLE refresh_tokens (
     token_hash TEXT PRIMARY KEY,
     family_id TEXT NOT NULL,
     user_id TEXT NOT NULL,
     client_id TEXT NOT NULL,
     expires_at BIGINT NOT NULL,
     used INTEGER NOT NULL DEFAULT 0);
   CREATE INDEX refresh_tokens_family ON refresh_tokens (family_id);
   CREATE TABLE link_tokens (
     token_hash TEXT PRIMARY KEY,
     user_id TEXT NOT NULL,
     created_at BIGINT NOT NULL);
   CREATE TABLE web_sessions (
     token_hash TEXT PRIMARY KEY,
     user_id TEXT NOT NULL,
     expires_at BIGINT NOT NULL);`,
  // 2: a redeemed authorization code is kept (used, with the family it started) until it
  // expires, so a replay can revoke the tokens it issued (RFC 6749 §4.1.2).
  `ALTER TABLE auth_codes ADD COLUMN used INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE auth_codes ADD COLUMN family_id TEXT`,
];

/** The advisory lock migrations hold on PostgreSQL (an arbitrary constant: "SHcl"). */
export const MIGRATION_LOCK = 0x5348636c;

/**
 * Brings the schema up to date; safe to run on every start, and from several instances
 * starting at once (on PostgreSQL they take turns under an advisory lock, and each sees
 * the versions the one before applied).
 */
export async function migrate(db: Database): Promise<number> {
  return db.exclusive ? db.exclusive(MIGRATION_LOCK, () => migrateNow(db)) : migrateNow(db);
}

async function migrateNow(db: Database): Promise<number> {
  await db.run('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)');
  const rows = await db.all<{ v: number | null }>('SELECT MAX(version) AS v FROM schema_migrations');
  const current = Number(rows[0]?.v ?? 0);
  for (let i = current; i < MIGRATIONS.length; i++) {
    await db.transaction(async (q) => {
      for (const statement of MIGRATIONS[i]
        .split(';')
        .map((s) => s.trim())
        .filter(Boolean))
        await q.run(statement);
      await q.run('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)', [i + 1, Date.now()]);
    });
  }
  return MIGRATIONS.length;
}
