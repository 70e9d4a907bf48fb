/** An inclusive byte range of a representation. */
export interface ByteRange {
  start: number;
  end: number;
}

/**
 * Interprets a Range header against a representation of `size` bytes (RFC 9110 §14).
 *
 * Returns the range to send, 'unsatisfiable' (answer 416), or undefined to ignore the header
 * and send the whole file. Several ranges are ignored too, as the RFC allows: renderers ask
 * for one range at a time, and multipart/byteranges would only be dead code here. A header
 * that does not parse is likewise ignored, as the RFC requires.
 */
export function parseRange(header: string | undefined, size: number): ByteRange | 'unsatisfiable' | undefined {
  if (header === undefined) return undefined;
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m) return undefined;
  const first = m[1];
  const last = m[2];
  if (first === '' && last === '') return undefined;

  if (first === '') {
    // Suffix range: the last N bytes.
    const suffix = Number(last);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? Infinity : Number(last);
  if (end < start) return undefined;
  if (start >= size) return 'unsatisfiable';
  return { start, end: Math.min(end, size - 1) };
}
