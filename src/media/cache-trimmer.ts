import { readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logger';
import { messageOf } from '../util/error-message';

export interface CacheTrimmerOptions {
  dir: string;
  /** The cache's own files (anything else in the folder is left alone). */
  files: RegExp;
  /** At most this many files (at least 1 is always kept). */
  maxEntries: number;
  /** At most this many bytes, unless the newest file alone is larger. */
  maxBytes: number;
  logger: Logger;
  /** The cache's name in log lines ("TTS cache"). */
  what: string;
  /** A trim starts this long after it is asked for (default 1500 ms): see schedule(). */
  delayMs?: number;
}

/** Files stat'ed at once by a trim: the rest of the hub's file reads get their turn in between. */
const STAT_BATCH = 8;

/**
 * Keeps a cache folder within a count and a byte budget: the least recently written files go
 * first, and the newest always stays (it is about to play). One trim runs at a time; asking
 * again meanwhile folds into one more pass. Shared by the TTS and announcement clip caches.
 */
export class CacheTrimmer {
  private running?: Promise<void>;
  private again = false;
  private timer?: NodeJS.Timeout;

  private readonly maxEntries: number;
  private readonly maxBytes: number;

  constructor(private readonly opts: CacheTrimmerOptions) {
    this.maxEntries = Math.max(1, opts.maxEntries);
    this.maxBytes = Math.max(1, opts.maxBytes);
  }

  /**
   * Trims soon (a file was just added); never throws, a failure is logged. Not at once: the
   * file just added is about to be played, and a trim's stat of every entry would queue in
   * libuv's thread pool ahead of the media server's open of that file (the speaker's first
   * byte waited for the whole cache to be read).
   */
  schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.start();
    }, this.opts.delayMs ?? 1500);
    this.timer.unref();
  }

  private start(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.trim()
      .catch((e: unknown) => this.opts.logger.warn({ err: messageOf(e) }, `${this.opts.what} eviction failed`))
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.start();
        }
      });
  }

  /** Resolves when no trim runs or waits to (tests, shutdown): a trim asked for runs now. */
  async idle(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.start();
    }
    while (this.running) await this.running;
  }

  private async trim(): Promise<void> {
    const { dir } = this.opts;
    const { maxEntries, maxBytes } = this;
    // A folder gone by the time a delayed trim runs (the hub's data folder removed after a stop) has nothing to trim.
    const all = await readdir(dir).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return [];
      throw e;
    });
    const names = all.filter((n) => this.opts.files.test(n));
    const entries: Array<{ name: string; mtime: number; size: number }> = [];
    for (let i = 0; i < names.length; i += STAT_BATCH) {
      const batch = await Promise.all(
        names.slice(i, i + STAT_BATCH).map(async (name) => {
          const st = await stat(join(dir, name)).catch(() => undefined);
          return { name, mtime: st?.mtimeMs ?? 0, size: st?.size ?? 0 };
        }),
      );
      entries.push(...batch);
    }
    // Newest first; kept while both budgets hold.
    entries.sort((a, b) => b.mtime - a.mtime);
    let bytes = 0;
    let kept = 0;
    let removed = 0;
    for (const e of entries) {
      bytes += e.size;
      if (kept === 0 || (kept < maxEntries && bytes <= maxBytes)) {
        kept++;
        continue;
      }
      bytes -= e.size;
      removed++;
      await unlink(join(dir, e.name)).catch(() => undefined);
    }
    if (removed) this.opts.logger.debug({ removed, kept, bytes }, `${this.opts.what} trimmed`);
  }
}
