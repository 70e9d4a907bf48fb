import type { Database } from './database';
import { migrate } from './migrations';
import { defaultSqlitePath, SqlJsDatabase } from './sqljs-database';

/**
 * Opens the configured store and brings its schema up to date: PostgreSQL for a
 * `postgres://` (or `postgresql://`) URL, else the embedded SQLite file (the given path,
 * or `cloud.sqlite` in the data folder).
 */
export async function openDatabase(options: { dataDir: string; database?: string }): Promise<Database> {
  const url = options.database;
  const db =
    url && /^postgres(ql)?:\/\//i.test(url)
      ? // pg loads only when used (about 10 MB the embedded setup never needs).
        await (require('./pg-database') as typeof import('./pg-database')).PgDatabase.open(url)
      : await SqlJsDatabase.open(url ? url.replace(/^sqlite:(\/\/)?/i, '') : defaultSqlitePath(options.dataDir));
  try {
    await migrate(db);
  } catch (e) {
    await db.close();
    throw e;
  }
  return db;
}
