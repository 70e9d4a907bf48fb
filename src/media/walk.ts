import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';

/** Called for an entry the walk could not read; the walk goes on without it. */
export type WalkProblem = (entry: string, error: unknown) => void;

/**
 * Yields the regular files under root, depth first, in name order (so scans are
 * reproducible). Symlinks are followed, because music collections are often assembled from
 * links; every directory and file is visited once by device and inode, which both ends
 * symlink loops and keeps a file reached through two links from being listed twice.
 *
 * Hidden entries (dot files and folders) are skipped: they are macOS AppleDouble "._x.mp3"
 * shadows, .Trash and similar, never music, and would only produce parse warnings.
 */
export async function* walkFiles(root: string, onProblem: WalkProblem): AsyncGenerator<string> {
  const seen = new Set<string>();
  let rootStat;
  try {
    rootStat = await stat(root);
  } catch (e) {
    onProblem(root, e);
    return;
  }
  if (!rootStat.isDirectory()) {
    onProblem(root, new Error('not a directory'));
    return;
  }
  seen.add(`${rootStat.dev}:${rootStat.ino}`);
  const pending = [root];
  while (pending.length > 0) {
    const dir = pending.pop() as string;
    let names: string[];
    try {
      names = (await readdir(dir)).filter((n) => !n.startsWith('.')).sort();
    } catch (e) {
      onProblem(dir, e);
      continue;
    }
    const subdirs: string[] = [];
    for (const name of names) {
      const entry = path.join(dir, name);
      let st;
      try {
        st = await stat(entry); // follows symlinks; a dangling one fails here
      } catch (e) {
        onProblem(entry, e);
        continue;
      }
      const key = `${st.dev}:${st.ino}`;
      if (seen.has(key)) continue;
      seen.add(key);
      if (st.isDirectory()) subdirs.push(entry);
      else if (st.isFile()) yield entry;
    }
    // Reversed onto the stack so subfolders come out in name order.
    pending.push(...subdirs.reverse());
  }
}
