import { Pool, types } from 'pg';
import type { Database, Queryable, Row, SqlValue } from './database';

// BIGINT columns hold epoch milliseconds, well inside Number's exact range.
types.setTypeParser(20, (v) => Number(v));

/** PostgreSQL through a small pool; the same statements as the embedded engine. */
export class PgDatabase implements Database {
  readonly engine = 'postgres' as const;

  private constructor(private readonly pool: Pool) {}

  static async open(url: string): Promise<PgDatabase> {
    const pool = new Pool({ connectionString: url, max: 8 });
    // Idle-client errors (a restarted server) are reported on the next query instead of crashing.
    pool.on('error', () => undefined);
    await pool.query('SELECT 1');
    return new PgDatabase(pool);
  }

  async all<T extends Row = Row>(sql: string, params: SqlValue[] = []): Promise<T[]> {
    return (await this.pool.query(sql, params)).rows as T[];
  }

  async run(sql: string, params: SqlValue[] = []): Promise<number> {
    return (await this.pool.query(sql, params)).rowCount ?? 0;
  }

  async transaction<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    const q: Queryable = {
      all: async <R extends Row>(sql: string, params: SqlValue[] = []) => (await client.query(sql, params)).rows as R[],
      run: async (sql: string, params: SqlValue[] = []) => (await client.query(sql, params)).rowCount ?? 0,
    };
    try {
      await client.query('BEGIN');
      const result = await fn(q);
      await client.query('COMMIT');
      return result;
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      client.release();
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
