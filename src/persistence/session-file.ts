import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { SessionChange, SessionRecord, SessionStore } from '../core/sessions';
import type { Logger } from '../logger';

export interface SessionFileOptions {
  /** Saved within this time after a session is created or closed. */
  tableDelayMs?: number;
  /** Saved within this time after sessions were only used (idle times renewed). */
  touchDelayMs?: number;
}

interface SavedSessions {
  version: 1;
  sessions: SessionRecord[];
}

/**
 * Keeps the session table in `<dataDir>/sessions.json` so that a SessionToken an automation
 * holds stays valid across hub restarts until it expires or is closed. Only SHA-256 hashes
 * of the tokens are written (mode 0600), atomically (a temporary file renamed over the old
 * one). The file is bounded by the table (sessions.maxSessions). Saves are coalesced: one
 * pending timer, soon after a create/close, lazily after mere use (a restart can then make
 * a session look up to touchDelayMs less recently used, against an idle time of an hour).
 */
export class SessionFile {
  readonly path: string;
  private timer?: NodeJS.Timeout;
  private dueAt = Infinity;
  private writing: Promise<void> = Promise.resolve();
  private readonly tableDelayMs: number;
  private readonly touchDelayMs: number;
  private closed = false;
  /** The next write that callers waiting for durability share (group commit). */
  private nextCommit?: Promise<void>;

  constructor(
    dataDir: string,
    private readonly store: SessionStore,
    private readonly logger: Logger,
    options: SessionFileOptions = {},
  ) {
    this.path = join(dataDir, 'sessions.json');
    this.tableDelayMs = options.tableDelayMs ?? 500;
    this.touchDelayMs = options.touchDelayMs ?? 30_000;
  }

  /** Loads the saved sessions into the store and starts following its changes. */
  async load(): Promise<void> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT')
        this.logger.warn(`sessions: cannot read ${this.path} (${(e as NodeJS.ErrnoException).code}); starting without saved sessions`);
      text = '';
    }
    if (text) {
      try {
        const saved = JSON.parse(text) as SavedSessions;
        if (saved?.version !== 1 || !Array.isArray(saved.sessions)) throw new Error('unknown format');
        const n = this.store.restore(saved.sessions.filter((r) => Array.isArray(r) && r.length === 2));
        this.logger.info({ sessions: n }, `sessions: ${n} restored`);
      } catch (e) {
        this.logger.warn(`sessions: ignoring ${this.path}: ${(e as Error).message}`);
      }
    }
    this.store.onChange = (change) => this.changed(change);
    this.store.durability = () => this.commit();
  }

  /**
   * Resolves once the table as it is now is on disk. Every create and close awaiting this
   * within one turn of the event loop shares one write (a burst of init_session costs one
   * fsync, not one each); writes never overlap, and each takes the table as it is when it starts.
   */
  commit(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.nextCommit ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      this.nextCommit = undefined;
      return this.flush();
    });
    return this.nextCommit;
  }

  private changed(change: SessionChange): void {
    if (this.closed) return;
    // A save is pending and a mere use cannot bring it forward (touchDelayMs >= tableDelayMs):
    // nothing to do, without reading the clock (this runs on every request with a session).
    if (change === 'touch' && this.timer && this.touchDelayMs >= this.tableDelayMs) return;
    const due = Date.now() + (change === 'table' ? this.tableDelayMs : this.touchDelayMs);
    if (due >= this.dueAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.dueAt = due;
    this.timer = setTimeout(() => this.flush().catch(() => undefined), due - Date.now());
    this.timer.unref();
  }

  /** Writes the table now (also called at stop). Writes never overlap. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.dueAt = Infinity;
    const records = this.store.records();
    this.writing = this.writing.then(() =>
      this.write(records).catch((e: unknown) => this.logger.warn(`sessions: cannot save ${this.path}: ${(e as Error).message}`)),
    );
    return this.writing;
  }

  /** Saves a last time and stops following changes. */
  async close(): Promise<void> {
    this.store.onChange = undefined;
    this.store.durability = undefined;
    await this.flush();
    this.closed = true;
  }

  private async write(records: SessionRecord[]): Promise<void> {
    const data: SavedSessions = { version: 1, sessions: records };
    const tmp = `${this.path}.${process.pid}.tmp`;
    await mkdir(dirname(this.path), { recursive: true });
    const fh = await open(tmp, 'w', 0o600);
    try {
      await fh.writeFile(JSON.stringify(data));
      await fh.sync();
    } finally {
      await fh.close();
    }
    try {
      await rename(tmp, this.path);
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    }
  }
}
