import { Pool, types } from 'pg';
import { DatabaseUnavailableError, type Database, type Queryable, type Row, type SqlValue } from './database';

// Connection-level failures (SQLSTATE classes 08 and 57P, refused/reset sockets), as opposed to
// errors of a statement: only these mean "the database is away, retry later".
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);

function unavailable(e: unknown): boolean {
  const code = String((e as { code?: unknown }).code ?? '');
  if (UNAVAILABLE_CODES.has(code) || code.startsWith('08')) return true;
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
    (e as Error)?.message ?? '',
  );
}

async function guarded<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw unavailable(e) ? new DatabaseUnavailableError(e) : e;
  }
}

// BIGINT columns hold epoch milliseconds, well inside Number's exact range.
types.setTypeParser(20, (v) => Number(v));

/** PostgreSQL through a small pool; the same statements as the embedded engine. */
export class PgDatabase implements Database {
  readonly engine = 'postgres' as const;

  private constructor(private readonly pool: Pool) {}

  static async open(url: string): Promise<PgDatabase> {
    // Bounded waits: with the server away a request fails in seconds instead of hanging.
    const pool = new Pool({ connectionString: url, max: 8, connectionTimeoutMillis: 5000, query_timeout: 15_000 });
    // Idle-client errors (a restarted server) are reported on the next query instead of crashing.
    pool.on('error', () => undefined);
    await pool.query('SELECT 1');
    return new PgDatabase(pool);
  }

  async all<T extends Row = Row>(sql: string, params: SqlValue[] = []): Promise<T[]> {
    return guarded(async () => (await this.pool.query(sql, params)).rows as T[]);
  }

  async run(sql: string, params: SqlValue[] = []): Promise<number> {
    return guarded(async () => (await this.pool.query(sql, params)).rowCount ?? 0);
  }

  async transaction<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    const client = await guarded(() => this.pool.connect());
    const q: Queryable = {
      all: async <R extends Row>(sql: string, params: SqlValue[] = []) => (await client.query(sql, params)).rows as R[],
      run: async (sql: string, params: SqlValue[] = []) => (await client.query(sql, params)).rowCount ?? 0,
    };
    let broken = false;
    try {
      await client.query('BEGIN');
      const result = await fn(q);
      await client.query('COMMIT');
      return result;
    } catch (e) {
      broken = unavailable(e);
      await client.query('ROLLBACK').catch(() => undefined);
      throw broken ? new DatabaseUnavailableError(e) : e;
    } finally {
      // A connection that failed goes, rather than back to the pool.
      client.release(broken);
    }
  }

  async exclusive<T>(lock: number, fn: () => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      // Session-level: held by this connection until unlocked (or until it dies, which frees it).
      await client.query('SELECT pg_advisory_lock($1)', [lock]);
      try {
        return await fn();
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [lock]).catch(() => undefined);
      }
    } finally {
      client.release();
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
