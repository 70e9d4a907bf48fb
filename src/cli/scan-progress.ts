import type { ScanProgress } from '../media/library';

/** A scan shorter than this shows nothing: a line that flashes by helps nobody. */
const SHOW_AFTER_MS = 1000;

/**
 * The terminal line `speakerhub hub` shows while it reads a large media library:
 * rewritten in place (carriage return, erase line) and erased when the scan is done. Only
 * on a terminal; elsewhere (journald, a file) the log's summary line says it all.
 */
export function scanProgressLine(out: NodeJS.WritableStream & { isTTY?: boolean }): (p: ScanProgress) => void {
  let shown = false;
  return (p) => {
    if (!out.isTTY) return;
    if (p.done) {
      if (shown) out.write('\r\x1b[K');
      shown = false;
      return;
    }
    if (p.elapsedMs < SHOW_AFTER_MS) return;
    shown = true;
    out.write(`\r\x1b[K  Scanning media: ${p.files} files, ${p.items} items so far …`);
  };
}
