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

export async function first<T extends Row>(q: Queryable, sql: string, params?: SqlValue[]): Promise<T | undefined> {
  return (await q.all<T>(sql, params))[0];
}
