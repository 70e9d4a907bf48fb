import { watch, type FSWatcher } from 'node:fs';
import type { Logger } from '../logger';

export interface FolderWatcherOptions {
  folders: string[];
  /** Quiet time after the last change before the rescan (a copy of an album is one rescan). */
  debounceMs: number;
  /** At most this many watched folders (each recursive watch costs inotify watches). */
  maxFolders: number;
  onChange: () => void;
  logger: Logger;
}

/**
 * Watches media folders (recursively) and calls onChange once the changes have settled. A
 * burst of events is one pending timer, never a queue, so the work per burst is bounded; a
 * folder that cannot be watched (gone, no inotify watches left) is logged and left to the
 * on-demand rescan.
 */
export class FolderWatcher {
  private readonly watchers: FSWatcher[] = [];
  private timer?: NodeJS.Timeout;

  constructor(private readonly options: FolderWatcherOptions) {}

  start(): void {
    const { folders, maxFolders, logger } = this.options;
    if (folders.length > maxFolders) logger.warn(`media library: watching the first ${maxFolders} of ${folders.length} folders for changes`);
    for (const folder of folders.slice(0, maxFolders)) {
      try {
        const w = watch(folder, { recursive: true, persistent: false }, () => this.changed());
        w.on('error', (e) => {
          logger.warn({ folder }, `media library: stopped watching ${folder} (${e.message}); rescan_media still works`);
          w.close();
        });
        this.watchers.push(w);
      } catch (e) {
        logger.warn({ folder }, `media library: cannot watch ${folder} (${(e as Error).message}); rescan_media still works`);
      }
    }
  }

  private changed(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.options.onChange();
    }, this.options.debounceMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const w of this.watchers.splice(0)) w.close();
  }
}
