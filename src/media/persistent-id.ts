import { createHash } from 'node:crypto';
import path from 'node:path';

const MAX_63_BIT = (1n << 63n) - 1n;

/**
 * The PersistentID of a library file: sha256 over the media folder's absolute path and the
 * file's path relative to it, first 8 bytes as an unsigned big-endian integer masked to 63
 * bits, in decimal.
 *
 * Derived from the path only (not an inode or a scan counter) so the same file keeps its ID
 * across restarts and rescans, and clients can store it. 63 bits because several clients
 * hold PersistentIDs in a signed 64-bit integer. The relative path is hashed with '/'
 * separators so an ID does not depend on the platform's separator; the folder is hashed as
 * configured (resolved, not realpath'd), so moving the folder or renaming the file yields a
 * new ID, which is the honest answer: nothing else identifies a tagless file.
 */
export function persistentIdFor(folder: string, relativePath: string): string {
  const rel = relativePath.split(path.sep).join('/');
  const digest = createHash('sha256').update(path.resolve(folder)).update('\0').update(rel).digest();
  return (digest.readBigUInt64BE(0) & MAX_63_BIT).toString();
}

/**
 * The sample tracks' PersistentIDs depend on their file names only, not on where the package
 * is installed, so documentation and scripts can use them on every hub.
 */
export function samplePersistentId(fileName: string): string {
  const digest = createHash('sha256').update('speakerhub-samples').update('\0').update(fileName).digest();
  return (digest.readBigUInt64BE(0) & MAX_63_BIT).toString();
}
