import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import initSqlJs, { type Database as SqlJsDb } from 'sql.js';
import type { Database, Queryable, Row, SqlValue } from './database';
import { Journal, readJournal } from './journal';
import { Mutex } from './mutex';

/** Checkpoint (snapshot + empty journal) once the journal has grown past this. */
const DEFAULT_CHECKPOINT_BYTES = 4 * 1024 * 1024;

/**
 * The embedded engine: SQLite compiled to WebAssembly (sql.js), the one embedded SQLite
 * that runs unchanged on every Node version the package supports. sql.js keeps the database
 * in memory, so durability is ours: `<file>` is the last snapshot, `<file>-journal` the
 * transactions committed since (see Journal). A checkpoint writes a new snapshot to a temp
 * file, fsyncs it and renames it over the old one (atomic), then empties the journal; the
 * snapshot records the last journal sequence it contains, so a kill between the rename and
 * the truncation replays nothing twice.
 */
export class SqlJsDatabase implements Database {
  readonly engine = 'sqlite' as const;
  private readonly lock = new Mutex();
  private seq = 0;
  private closed = false;

  private constructor(
    private readonly db: SqlJsDb,
    private readonly file: string,
    private readonly journal: Journal,
    private readonly checkpointBytes: number,
  ) {}

  static async open(file: string, options: { checkpointBytes?: number } = {}): Promise<SqlJsDatabase> {
    await mkdir(dirname(file), { recursive: true });
    const SQL = await initSqlJs();
    let image: Buffer | undefined;
    try {
      image = await readFile(file);
    } catch {
      /* a new database */
    }
    const db = new SQL.Database(image);
    db.run('CREATE TABLE IF NOT EXISTS _checkpoint (seq INTEGER NOT NULL)');
    const res = db.exec('SELECT seq FROM _checkpoint');
    let seq = res.length ? Number(res[0].values[0][0]) : 0;
    if (!res.length) db.run('INSERT INTO _checkpoint (seq) VALUES (0)');
    for (const entry of await readJournal(`${file}-journal`)) {
      if (entry.seq <= seq) continue;
      db.run('BEGIN');
      for (const [sql, params] of entry.writes) db.run(toSqlite(sql), params);
      db.run('COMMIT');
      seq = entry.seq;
    }
    const self = new SqlJsDatabase(db, file, await Journal.open(`${file}-journal`), options.checkpointBytes ?? DEFAULT_CHECKPOINT_BYTES);
    self.seq = seq;
    await self.checkpoint();
    return self;
  }

  all<T extends Row = Row>(sql: string, params: SqlValue[] = []): Promise<T[]> {
    return this.lock.run(async () => this.select<T>(sql, params));
  }

  run(sql: string, params: SqlValue[] = []): Promise<number> {
    return this.transaction((q) => q.run(sql, params));
  }

  transaction<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    return this.lock.run(async () => {
      if (this.closed) throw new Error('the database is closed');
      const writes: [string, SqlValue[]][] = [];
      const q: Queryable = {
        all: async <R extends Row>(sql: string, params: SqlValue[] = []) => {
          if (!/^\s*select/i.test(sql)) writes.push([sql, params]);
          return this.select<R>(sql, params);
        },
        run: async (sql: string, params: SqlValue[] = []) => {
          this.db.run(toSqlite(sql), params);
          writes.push([sql, params]);
          return this.db.getRowsModified();
        },
      };
      this.db.run('BEGIN');
      try {
        const result = await fn(q);
        if (writes.length) await this.journal.append({ seq: this.seq + 1, writes });
        this.db.run('COMMIT');
        if (writes.length) this.seq++;
        if (this.journal.bytes > this.checkpointBytes) await this.checkpoint();
        return result;
      } catch (e) {
        this.db.run('ROLLBACK');
        throw e;
      }
    });
  }

  async close(): Promise<void> {
    await this.lock.run(async () => {
      if (this.closed) return;
      await this.checkpoint();
      this.closed = true;
      await this.journal.close();
      this.db.close();
    });
  }

  private select<T>(sql: string, params: SqlValue[]): T[] {
    const stmt = this.db.prepare(toSqlite(sql));
    try {
      stmt.bind(params);
      const rows: T[] = [];
      while (stmt.step()) rows.push(stmt.getAsObject() as T);
      return rows;
    } finally {
      stmt.free();
    }
  }

  /** New snapshot, atomically swapped in, then an empty journal. */
  private async checkpoint(): Promise<void> {
    this.db.run('UPDATE _checkpoint SET seq = ?', [this.seq]);
    const image = this.db.export();
    const tmp = `${this.file}.tmp`;
    const handle = await open(tmp, 'w', 0o600);
    try {
      await handle.write(image);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, this.file);
    await syncDir(dirname(this.file));
    await this.journal.reset();
  }
}

/** `$1` placeholders (PostgreSQL's) become SQLite's numbered `?1`. */
function toSqlite(sql: string): string {
  return sql.replace(/\$(\d+)/g, '?$1');
}

async function syncDir(dir: string): Promise<void> {
  const h = await open(dir, 'r');
  try {
    await h.sync();
  } catch {
    /* some file systems refuse fsync on directories */
  } finally {
    await h.close();
  }
}

export function defaultSqlitePath(dataDir: string): string {
  return join(dataDir, 'cloud.sqlite');
}
