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
}

/**
 * Keeps a cache folder within a count and a byte budget: the least recently written files go
 * first, and the newest always stays (it is about to play). One trim runs at a time; asking
 * again meanwhile folds into one more pass. Shared by the TTS and announcement clip caches.
 */
export class CacheTrimmer {
  private running?: Promise<void>;
  private again = false;

  private readonly maxEntries: number;
  private readonly maxBytes: number;

  constructor(private readonly opts: CacheTrimmerOptions) {
    this.maxEntries = Math.max(1, opts.maxEntries);
    this.maxBytes = Math.max(1, opts.maxBytes);
  }

  /** Trims soon (a file was just added); never throws, a failure is logged. */
  schedule(): void {
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
          this.schedule();
        }
      });
  }

  /** Resolves when no trim runs (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private async trim(): Promise<void> {
    const { dir } = this.opts;
    const { maxEntries, maxBytes } = this;
    const names = (await readdir(dir)).filter((n) => this.opts.files.test(n));
    const entries = await Promise.all(
      names.map(async (name) => {
        const st = await stat(join(dir, name)).catch(() => undefined);
        return { name, mtime: st?.mtimeMs ?? 0, size: st?.size ?? 0 };
      }),
    );
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
