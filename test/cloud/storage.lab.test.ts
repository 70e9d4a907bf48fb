/**
 * The embedded store's durability (a SIGKILL loses nothing reported committed), the
 * migrations, and accounts (validation, hashing, sign-in) on whichever engine the suite
 * runs (SPEAKERHUB_TEST_DATABASE selects PostgreSQL).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Accounts, AccountError } from '../../src/cloud/accounts/accounts';
import { MIGRATIONS } from '../../src/cloud/storage/migrations';
import { openDatabase } from '../../src/cloud/storage/open';
import { SqlJsDatabase } from '../../src/cloud/storage/sqljs-database';
import type { Database } from '../../src/cloud/storage/database';
import { freshDatabase, onPostgres } from './helpers';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'speakerhub-store-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Runs the writer until it has reported `atLeast` commits, SIGKILLs it, returns what it reported. */
function writeThenKill(file: string, atLeast: number): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(__dirname, 'store-writer.js'), file], { stdio: ['ignore', 'pipe', 'pipe'] });
    const seen: number[] = [];
    let buf = '';
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    child.stdout.on('data', (d) => {
      buf += d;
      const lines = buf.split('\n');
      buf = lines.pop()!;
      for (const l of lines) seen.push(Number(l));
      if (seen.length >= atLeast && !child.killed) child.kill('SIGKILL');
    });
    child.on('exit', (code, signal) => (signal === 'SIGKILL' ? resolve(seen) : reject(new Error(`writer exited ${code}: ${err}`))));
  });
}

const embeddedOnly = onPostgres() ? describe.skip : describe;

embeddedOnly('embedded SQLite (sql.js) durability', () => {
  test('a SIGKILLed writer loses no commit it reported, over several kills and checkpoints', async () => {
    const file = join(dir, 'cloud.sqlite');
    const reported: number[] = [];
    for (let round = 0; round < 4; round++) reported.push(...(await writeThenKill(file, 40 + round * 7)));
    const db = await SqlJsDatabase.open(file);
    const tokens = new Set((await db.all<{ token_hash: string }>('SELECT token_hash FROM link_tokens')).map((r) => r.token_hash));
    const sessions = new Set((await db.all<{ token_hash: string }>('SELECT token_hash FROM web_sessions')).map((r) => r.token_hash));
    for (const i of reported) {
      expect(tokens.has(`t${i}`)).toBe(true);
      expect(sessions.has(`s${i}`)).toBe(true); // both writes of a transaction, never half of one
    }
    expect(tokens.size).toBe(sessions.size);
    await db.close();
  }, 60_000);

  test('a torn journal tail is ignored; a rolled-back transaction leaves nothing', async () => {
    const file = join(dir, 'cloud.sqlite');
    let db = await SqlJsDatabase.open(file, { checkpointBytes: 1 << 30 });
    await db.run('CREATE TABLE t (v TEXT)');
    await db.run('INSERT INTO t (v) VALUES ($1)', ['kept']);
    await expect(
      db.transaction(async (q) => {
        await q.run('INSERT INTO t (v) VALUES ($1)', ['rolled back']);
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    // Simulate a kill mid-append: garbage after the last intact line.
    const { appendFile } = await import('node:fs/promises');
    await appendFile(`${file}-journal`, 'abcdef {"seq":99,"wri');
    expect((await readFile(`${file}-journal`, 'utf8')).length).toBeGreaterThan(0);
    // Drop the in-memory instance without a checkpoint (as a kill would).
    (db as unknown as { journal: { close(): Promise<void> } }).journal.close();
    db = await SqlJsDatabase.open(file);
    expect(await db.all('SELECT v FROM t')).toEqual([{ v: 'kept' }]);
    await db.close();
  });
});

describe(`accounts on ${onPostgres() ? 'PostgreSQL' : 'SQLite'}`, () => {
  let db: Database;
  let accounts: Accounts;
  let url: string | undefined;
  beforeEach(async () => {
    url = await freshDatabase();
    db = await openDatabase({ dataDir: dir, database: url });
    accounts = new Accounts(db);
  });
  afterEach(async () => {
    await db.close();
  });

  test('migrations are recorded once and re-running them changes nothing', async () => {
    const again = await openDatabase({ dataDir: dir, database: url });
    const rows = await again.all<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
    expect(rows.map((r) => Number(r.version))).toEqual(MIGRATIONS.map((_, i) => i + 1));
    await again.close();
  });

  test('sign-up validates, hashes with scrypt, and refuses a taken username in any case', async () => {
    const u = await accounts.signup({ username: 'Alice.B_1-x', email: 'alice@example.org', password: 'correct horse battery' });
    expect(u.username).toBe('Alice.B_1-x');
    const row = (await db.all<{ password_hash: string }>('SELECT password_hash FROM users'))[0];
    expect(row.password_hash).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(row.password_hash).not.toContain('correct horse');
    const refuse = async (input: Record<string, string>, code: string, field: string, message: RegExp) => {
      const e = await accounts.signup(input).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(AccountError);
      expect(e).toMatchObject({ code, field });
      expect((e as Error).message).toMatch(message);
    };
    await refuse({ username: 'alice.b_1-X', email: 'a@example.org', password: 'correct horse battery' }, 'username_taken', 'username', /taken/);
    await refuse({ username: 'a', email: 'a@example.org', password: 'correct horse battery' }, 'invalid_field', 'username', /2–32/);
    await refuse({ username: 'x'.repeat(33), email: 'a@example.org', password: 'correct horse battery' }, 'invalid_field', 'username', /2–32/);
    await refuse(
      { username: 'bob smith', email: 'a@example.org', password: 'correct horse battery' },
      'invalid_field',
      'username',
      /letters, digits/,
    );
    await refuse({ username: 'bob', email: 'not-an-email', password: 'correct horse battery' }, 'invalid_field', 'email', /e-mail address/);
    await refuse({ username: 'bob', email: 'bob@example.org', password: 'short' }, 'invalid_field', 'password', /too weak.*10 characters/);
    await refuse({ username: 'bob', email: 'bob@example.org', password: 'password123' }, 'invalid_field', 'password', /too weak.*common/);
    await refuse({ username: 'bob', email: 'bob@example.org', password: 'aaaaaaaaaaaa' }, 'invalid_field', 'password', /too weak/);
  });

  test('at most two memory-hard hashes run at once; the others queue and complete', async () => {
    const crypto = require('node:crypto') as typeof import('node:crypto');
    const { hashPassword, verifyPassword } = await import('../../src/cloud/accounts/password');
    const real = crypto.scrypt;
    let running = 0;
    let most = 0;
    const spy = jest.spyOn(crypto, 'scrypt').mockImplementation(((...args: unknown[]) => {
      const cb = args[args.length - 1] as (e: Error | null, k: Buffer) => void;
      running++;
      most = Math.max(most, running);
      (real as unknown as (...a: unknown[]) => void)(...args.slice(0, -1), (e: Error | null, k: Buffer) => {
        running--;
        cb(e, k);
      });
    }) as typeof crypto.scrypt);
    try {
      const hashes = await Promise.all(Array.from({ length: 6 }, (_, i) => hashPassword(`password number ${i}`)));
      expect(await Promise.all(hashes.map((h, i) => verifyPassword(`password number ${i}`, h)))).toEqual(Array(6).fill(true));
      expect(spy).toHaveBeenCalledTimes(12);
      expect(most).toBe(2);
    } finally {
      spy.mockRestore();
    }
  });

  test('sign-in checks the password and does not tell which part was wrong', async () => {
    await accounts.signup({ username: 'carol', email: 'carol@example.org', password: 'correct horse battery' });
    await expect(accounts.signin('CAROL', 'correct horse battery')).resolves.toMatchObject({ username: 'carol' });
    const wrongPassword = await accounts.signin('carol', 'wrong horse battery').catch((e: Error) => e.message);
    const noUser = await accounts.signin('nobody', 'correct horse battery').catch((e: Error) => e.message);
    expect(wrongPassword).toBe('Wrong username or password.');
    expect(noUser).toBe(wrongPassword);
  });
});
