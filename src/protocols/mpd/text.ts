/** Quotes one argument the way the MPD protocol does (line breaks are refused by the client). */
export function arg(value: string | number): string {
  return `"${String(value).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** `key: value` lines → an object (first value of each key). */
export function parseFields(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const i = line.indexOf(': ');
    if (i > 0) {
      const k = line.slice(0, i);
      if (!(k in out)) out[k] = line.slice(i + 2);
    }
  }
  return out;
}
