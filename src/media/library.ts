import path from 'node:path';
import type { Logger } from '../logger';
import { messageOf } from '../util/error-message';
import { audioContentType } from './audio-types';
import { FolderWatcher } from './folder-watcher';
import { findDrmProtection, protectedCodec } from './drm';
import { metadataReader, type MetadataReader } from './metadata-reader';
import { persistentIdFor, samplePersistentId } from './persistent-id';
import type { MediaCatalog, MediaItem } from './types';
import { walkFiles } from './walk';
import { compareTitles } from './title-order';

export interface MediaLibraryOptions {
  /** Folders scanned recursively; a missing one is logged and skipped. */
  folders: string[];
  /** The sample tracks' folder: its items get install-independent PersistentIDs (samplePersistentId). */
  sampleFolder?: string;
  logger: Logger;
  /** The hub's own tag reader (default: one shared by the process, for standalone use). */
  reader?: MetadataReader;
  /** Told how a scan gets on (at most every PROGRESS_EVERY_MS, and once at the end): a large library takes a while. */
  onProgress?: (progress: ScanProgress) => void;
}

export interface ScanProgress {
  /** Files looked at so far (audio or not). */
  files: number;
  /** Media items found so far. */
  items: number;
  /** ms since the scan began. */
  elapsedMs: number;
  done: boolean;
}

const PROGRESS_EVERY_MS = 250;

/** Why a file was left out of the library, for the scan summary. */
type Outcome = MediaItem | 'not-audio' | 'refused' | 'skipped';

function compareItems(a: MediaItem, b: MediaItem): number {
  return (
    compareTitles(a.artist, b.artist) ||
    compareTitles(a.album, b.album) ||
    compareTitles(a.title, b.title) ||
    (a.file < b.file ? -1 : a.file > b.file ? 1 : 0)
  );
}

/**
 * The hub's media library: audio files under the configured folders, with tags read by
 * music-metadata. A scan builds a new index and swaps it in at the end, so readers never see
 * a half-scanned library; scans are serialized.
 */
export class MediaLibrary implements MediaCatalog {
  private readonly folders: string[];
  private readonly sampleFolder?: string;
  private readonly log: Logger;
  private items: MediaItem[] = [];
  private _version = 0;
  private byId = new Map<string, MediaItem>();
  private scanning: Promise<void> = Promise.resolve();
  /** The scan that will start after the running one; callers in the meantime share it. */
  private followUp?: Promise<void>;
  private watcher?: FolderWatcher;
  private readonly onProgress?: (progress: ScanProgress) => void;
  private readonly reader: MetadataReader;

  constructor(options: MediaLibraryOptions) {
    this.reader = options.reader ?? metadataReader;
    this.folders = options.folders.map((f) => path.resolve(f));
    this.sampleFolder = options.sampleFolder === undefined ? undefined : path.resolve(options.sampleFolder);
    this.log = options.logger;
    this.onProgress = options.onProgress;
  }

  /** Sorted by artist, album, title. */
  list(): MediaItem[] {
    return [...this.items];
  }

  get version(): number {
    return this._version;
  }

  get(persistentId: string): MediaItem | undefined {
    return this.byId.get(persistentId);
  }

  /**
   * (Re)builds the index. Calls while a scan runs share one follow-up scan, so a burst of
   * requests (rescan_media, the folder watcher) costs at most two scans, never a queue.
   */
  scan(): Promise<void> {
    if (this.followUp) return this.followUp;
    const next = this.scanning.then(() => {
      if (this.followUp === next) this.followUp = undefined;
      return this.scanAll();
    });
    this.followUp = next;
    this.scanning = next.catch(() => undefined);
    return next;
  }

  rescan(): Promise<void> {
    return this.scan();
  }

  /** Rescans after changes in the folders settle (debounced). */
  watch(options: { debounceMs: number; maxFolders?: number }): void {
    this.watcher?.stop();
    this.watcher = new FolderWatcher({
      folders: this.folders,
      debounceMs: options.debounceMs,
      maxFolders: options.maxFolders ?? 64,
      logger: this.log,
      onChange: () => {
        this.log.debug('media library: folder changed, rescanning');
        this.scan().catch((e: unknown) => this.log.warn(`media library: rescan failed: ${messageOf(e)}`));
      },
    });
    this.watcher.start();
  }

  stopWatching(): void {
    this.watcher?.stop();
    this.watcher = undefined;
  }

  private async scanAll(): Promise<void> {
    const started = Date.now();
    const byId = new Map<string, MediaItem>();
    const files = new Set<string>();
    let refused = 0;
    let skipped = 0;
    let reported = started;
    const report = (done: boolean) => {
      const now = Date.now();
      if (!this.onProgress || (!done && now - reported < PROGRESS_EVERY_MS)) return;
      reported = now;
      try {
        this.onProgress({ files: files.size, items: byId.size, elapsedMs: now - started, done });
      } catch {
        /* a progress display must never fail a scan */
      }
    };
    for (const folder of this.folders) {
      const onProblem = (entry: string, e: unknown) => {
        this.log.warn({ entry }, `media library: skipped unreadable ${entry}: ${messageOf(e)}`);
      };
      // One file at a time: every step awaits I/O, so a large library never holds the event
      // loop for long, and the disk is not flooded with parallel reads.
      for await (const file of walkFiles(folder, onProblem)) {
        if (files.has(file)) continue; // configured folders may nest; the first one claims the file
        files.add(file);
        report(false);
        const outcome = await this.readFile(folder, file);
        if (outcome === 'refused') refused++;
        else if (outcome === 'skipped') skipped++;
        else if (outcome !== 'not-audio') {
          const clash = byId.get(outcome.persistentId);
          if (clash) {
            // 63-bit hashes practically never collide; if they do, the first file keeps the ID.
            this.log.warn({ file }, `media library: skipped ${file}: PersistentID collides with ${clash.file}`);
            skipped++;
          } else {
            byId.set(outcome.persistentId, outcome);
          }
        }
      }
    }
    this.byId = byId;
    this.items = [...byId.values()].sort(compareItems);
    this._version++;
    report(true);
    this.log.info(
      { items: this.items.length, refused, skipped, ms: Date.now() - started },
      `media library: ${this.items.length} items from ${this.folders.length} folder(s)`,
    );
  }

  private async readFile(folder: string, file: string): Promise<Outcome> {
    const contentType = audioContentType(file);
    if (!contentType) return 'not-audio';
    try {
      const drm = await findDrmProtection(file);
      if (drm) return this.refuse(file, drm);
      const meta = await this.reader.read(file);
      const drmCodec = protectedCodec(meta.codecNames);
      if (drmCodec) return this.refuse(file, drmCodec);
      const seconds = meta.duration;
      // music-metadata "parses" random bytes named .mp3 without an error; finding no
      // duration is what tells junk from audio. (It also drops VBR MP3s that lack a
      // Xing/VBRI header: measuring those needs a full read, which reports bogus durations
      // for junk too.)
      if (seconds === undefined || !Number.isFinite(seconds) || seconds <= 0) {
        return this.skip(file, 'no playable audio found (duration unknown)');
      }
      const { title, artist, albumartist, album, track, picture } = meta;
      const item: MediaItem = {
        persistentId:
          folder === this.sampleFolder ? samplePersistentId(path.relative(folder, file)) : persistentIdFor(folder, path.relative(folder, file)),
        title: title?.trim() || path.basename(file, path.extname(file)),
        artist: artist?.trim() || albumartist?.trim() || '',
        album: album?.trim() || '',
        duration: Math.round(seconds),
        file,
        contentType,
        ...(track && Number.isInteger(track) && track > 0 ? { track } : {}),
        ...(picture ? { artwork: picture } : {}),
      };
      return Object.freeze(item);
    } catch (e) {
      return this.skip(file, messageOf(e));
    }
  }

  private refuse(file: string, why: string): 'refused' {
    this.log.warn({ file }, `refused DRM-protected file ${file}: ${why}`);
    return 'refused';
  }

  private skip(file: string, why: string): 'skipped' {
    this.log.warn({ file }, `media library: skipped ${file}: ${why}`);
    return 'skipped';
  }
}
