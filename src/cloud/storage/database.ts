/**
 * The cloud's one query layer. Accounts, clients and tokens go through it whatever the
 * engine: an embedded SQLite file (sql.js) by default, PostgreSQL with `--database
 * postgres://…`. Statements are written once, in the SQL both engines accept, with `$1`
 * placeholders; integers are JavaScript numbers (times are epoch milliseconds).
 */
export type SqlValue = string | number | null;
export type Row = Record<string, SqlValue>;

export interface Queryable {
  /** Rows of a SELECT (or a statement with RETURNING). */
  all<T extends Row = Row>(sql: string, params?: SqlValue[]): Promise<T[]>;
  /** A write; resolves with the number of rows changed. */
  run(sql: string, params?: SqlValue[]): Promise<number>;
}

export interface Database extends Queryable {
  readonly engine: 'sqlite' | 'postgres';
  /** Runs fn in one transaction: all its writes are committed (durably) together, or none. */
  transaction<T>(fn: (q: Queryable) => Promise<T>): Promise<T>;
  /**
   * Runs fn while holding a lock shared by every process on this database (PostgreSQL: an
   * advisory lock), so instances of a cluster starting together migrate one after another.
   * Absent on the embedded engine (one process only).
   */
  exclusive?<T>(lock: number, fn: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * The database cannot be reached now (refused, reset, shutting down): requests fail with
 * 503 and a Retry-After instead of a 500, and the next one tries again.
 */
export class DatabaseUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`the database is unreachable: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'DatabaseUnavailableError';
  }
}

/** Whether an error (or what it wraps) says the database is unreachable. */
export function isDatabaseUnavailable(e: unknown): boolean {
  for (let x = e, depth = 0; x && depth < 4; depth++) {
    if (x instanceof DatabaseUnavailableError) return true;
    x = (x as { inner?: unknown; cause?: unknown }).inner ?? (x as { cause?: unknown }).cause;
  }
  return false;
}

export async function first<T extends Row>(q: Queryable, sql: string, params?: SqlValue[]): Promise<T | undefined> {
  return (await q.all<T>(sql, params))[0];
}
