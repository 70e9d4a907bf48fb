import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import path from 'node:path';
import type { MediaCatalog, MediaItem } from './types';

/**
 * Stable URLs of the library's items on the media server, for the DLNA MediaServer's `res`:
 * `/library/<PersistentID>/<tag>/<file name>`, where tag is an HMAC of the PersistentID under a
 * key drawn when the hub starts (128 bits shown). Unlike the capability URLs of a playback,
 * which stop working when it ends, these work while the hub runs, as a control point that
 * browsed the library expects; yet only a host that could Browse (dlna.allow) learns one —
 * a PersistentID alone does not reach a file.
 */

export const LIBRARY_PATH = /^\/library\/(\d{1,20})\/([A-Za-z0-9_-]{22})(?:\/[^/]*)?$/;

export class ItemUrls {
  private readonly key = randomBytes(32);

  constructor(private readonly catalog: MediaCatalog) {}

  private tag(persistentId: string): Buffer {
    return createHmac('sha256', this.key).update(persistentId).digest().subarray(0, 16);
  }

  /** The path (after the server's origin) of an item. */
  pathOf(item: MediaItem): string {
    return `/library/${item.persistentId}/${this.tag(item.persistentId).toString('base64url')}/${encodeURIComponent(path.basename(item.file))}`;
  }

  /** The item a path names, when its tag is right (compared in constant time) and the item is still in the library. */
  resolve(pathname: string): MediaItem | undefined {
    const m = LIBRARY_PATH.exec(pathname);
    if (!m) return undefined;
    const given = Buffer.from(m[2], 'base64url');
    const want = this.tag(m[1]);
    if (given.length !== want.length || !timingSafeEqual(given, want)) return undefined;
    return this.catalog.get(m[1]);
  }
}
