import path from 'node:path';
import type { Logger } from '../logger';
import { audioContentType } from './audio-types';
import { findDrmProtection, protectedCodec } from './drm';
import { metadataReader, type MetadataReader } from './metadata-reader';
import { persistentIdFor } from './persistent-id';
import type { MediaCatalog, MediaItem } from './types';
import { walkFiles } from './walk';

export interface MediaLibraryOptions {
  /** Folders scanned recursively; a missing one is logged and skipped. */
  folders: string[];
  logger: Logger;
  /** The hub's own tag reader (default: one shared by the process, for standalone use). */
  reader?: MetadataReader;
}

/** Why a file was left out of the library, for the scan summary. */
type Outcome = MediaItem | 'not-audio' | 'refused' | 'skipped';

const collator = new Intl.Collator('en', { sensitivity: 'base', numeric: true });

function compareItems(a: MediaItem, b: MediaItem): number {
  return (
    collator.compare(a.artist, b.artist) ||
    collator.compare(a.album, b.album) ||
    collator.compare(a.title, b.title) ||
    (a.file < b.file ? -1 : a.file > b.file ? 1 : 0)
  );
}

function reason(e: unknown): string {
  // Duck-typed: errors from another realm (vm contexts, jest) fail instanceof Error.
  const message = (e as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : String(e);
}

/**
 * The hub's media library: audio files under the configured folders, with tags read by
 * music-metadata. A scan builds a new index and swaps it in at the end, so readers never see
 * a half-scanned library; scans are serialized.
 */
export class MediaLibrary implements MediaCatalog {
  private readonly folders: string[];
  private readonly log: Logger;
  private items: MediaItem[] = [];
  private byId = new Map<string, MediaItem>();
  private scanning: Promise<void> = Promise.resolve();
  private readonly reader: MetadataReader;

  constructor(options: MediaLibraryOptions) {
    this.reader = options.reader ?? metadataReader;
    this.folders = options.folders.map((f) => path.resolve(f));
    this.log = options.logger;
  }

  /** Sorted by artist, album, title. */
  list(): MediaItem[] {
    return [...this.items];
  }

  get(persistentId: string): MediaItem | undefined {
    return this.byId.get(persistentId);
  }

  /** (Re)builds the index. A call while a scan runs starts another one after it. */
  scan(): Promise<void> {
    const next = this.scanning.then(() => this.scanAll());
    this.scanning = next.catch(() => undefined);
    return next;
  }

  rescan(): Promise<void> {
    return this.scan();
  }

  private async scanAll(): Promise<void> {
    const started = Date.now();
    const byId = new Map<string, MediaItem>();
    const files = new Set<string>();
    let refused = 0;
    let skipped = 0;
    for (const folder of this.folders) {
      const onProblem = (entry: string, e: unknown) => {
        this.log.warn({ entry }, `media library: skipped unreadable ${entry}: ${reason(e)}`);
      };
      // One file at a time: every step awaits I/O, so a large library never holds the event
      // loop for long, and the disk is not flooded with parallel reads.
      for await (const file of walkFiles(folder, onProblem)) {
        if (files.has(file)) continue; // configured folders may nest; the first one claims the file
        files.add(file);
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
      const { title, artist, albumartist, album } = meta;
      const item: MediaItem = {
        persistentId: persistentIdFor(folder, path.relative(folder, file)),
        title: title?.trim() || path.basename(file, path.extname(file)),
        artist: artist?.trim() || albumartist?.trim() || '',
        album: album?.trim() || '',
        duration: Math.round(seconds),
        file,
        contentType,
      };
      return Object.freeze(item);
    } catch (e) {
      return this.skip(file, reason(e));
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
