import { readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logger';

export interface CacheTrimmerOptions {
  dir: string;
  /** The cache's own files (anything else in the folder is left alone). */
  files: RegExp;
  maxEntries: number;
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

  constructor(private readonly opts: CacheTrimmerOptions) {}

  /** Trims soon (a file was just added); never throws, a failure is logged. */
  schedule(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.trim()
      .catch((e: unknown) => {
        // Duck-typed: an error from another realm (a vm, jest) is no instanceof this realm's Error.
        const message = (e as { message?: unknown } | undefined)?.message;
        this.opts.logger.warn({ err: typeof message === 'string' ? message : String(e) }, `${this.opts.what} eviction failed`);
      })
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
    const { dir, maxEntries, maxBytes } = this.opts;
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
