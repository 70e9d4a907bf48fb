import type { MetadataReader, Picture } from './metadata-reader';
import type { MediaItem } from './types';

/** Bounds of the cover cache: a cover larger than MAX_PICTURE_BYTES is not served. */
export const ARTWORK_LIMITS = { maxPictureBytes: 1024 * 1024, maxEntries: 128, maxTotalBytes: 16 * 1024 * 1024, maxReading: 16 };

/**
 * Embedded covers of library items, read on demand by the tag reader (the scan notes only
 * whether a file has one) and kept in a small LRU bounded in entries and bytes. Reads under
 * way are bounded too: a control point asking for hundreds of covers at once gets the rest
 * later (undefined, answered 503 by the caller), not a queue.
 */
export class ArtworkCache {
  private readonly cache = new Map<string, Picture>();
  private bytes = 0;
  private readonly reading = new Map<string, Promise<Picture | undefined>>();

  constructor(
    private readonly reader: Pick<MetadataReader, 'readPicture'>,
    private readonly limits = ARTWORK_LIMITS,
  ) {}

  /** The item's cover; undefined when it has none, it is too large, or too many are being read. */
  async get(item: MediaItem): Promise<Picture | undefined> {
    if (!item.artwork) return undefined;
    const key = `${item.persistentId}:${item.file}`;
    const hit = this.cache.get(key);
    if (hit) {
      this.cache.delete(key);
      this.cache.set(key, hit);
      return hit;
    }
    const running = this.reading.get(key);
    if (running) return running;
    if (this.reading.size >= this.limits.maxReading) return undefined;
    const read = this.reader
      .readPicture(item.file, this.limits.maxPictureBytes)
      .catch(() => undefined)
      .then((p) => {
        this.reading.delete(key);
        if (p) this.keep(key, p);
        return p;
      });
    this.reading.set(key, read);
    return read;
  }

  private keep(key: string, p: Picture): void {
    this.cache.set(key, p);
    this.bytes += p.data.length;
    for (const [k, v] of this.cache) {
      if (this.cache.size <= this.limits.maxEntries && this.bytes <= this.limits.maxTotalBytes) break;
      this.cache.delete(k);
      this.bytes -= v.data.length;
    }
  }
}
