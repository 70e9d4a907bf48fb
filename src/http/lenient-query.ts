/**
 * Query-string parsing that copes with the clients in the wild (compatibility.md): values
 * sent unencoded, so a MediaUrl can itself contain `?` and `&`, and Text can hold spaces
 * and quotes. A `&` only starts a new parameter when what follows is `Name=` for a name
 * the operation knows; otherwise it belongs to the free-text value before it.
 */

const UNENCODED_URL = /^"?[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/** Parameters whose values may legitimately contain unencoded `&` and `=`. */
const FREE_TEXT = new Set(['MediaUrl', 'Text']);

export function parseLenientQuery(rawUrl: string, known: ReadonlySet<string>): Record<string, string> {
  const q = rawUrl.indexOf('?');
  const out: Record<string, string> = {};
  if (q < 0) return out;
  const query = rawUrl.slice(q + 1);
  // Most requests carry plain tokens and IDs: nothing to decode, so skip decoding entirely.
  const plain = query.indexOf('%') < 0 && query.indexOf('+') < 0;
  let current: string | undefined;
  // Pieces between '&'s, taken without split(): most queries are one parameter, the session token.
  let start = 0;
  while (start <= query.length) {
    let end = query.indexOf('&', start);
    if (end < 0) end = query.length;
    const piece = query.slice(start, end);
    start = end + 1;
    const eq = piece.indexOf('=');
    const name = eq < 0 ? undefined : plain ? piece.slice(0, eq) : decode(piece.slice(0, eq), true);
    if (name !== undefined && (known.has(name) || !(current && FREE_TEXT.has(current)))) {
      current = name;
      if (!(name in out)) out[name] = piece.slice(eq + 1);
      else current = undefined; // a repeated parameter: the first one counts
      continue;
    }
    if (current && FREE_TEXT.has(current)) out[current] += `&${piece}`;
  }
  if (plain) return out;
  for (const [k, v] of Object.entries(out)) {
    // A MediaUrl sent unencoded ("http://…") is taken verbatim: decoding it would turn its
    // own %26 into a separator. An encoded one ("http%3A%2F%2F…") is decoded once.
    out[k] = k === 'MediaUrl' && UNENCODED_URL.test(v) ? v : decode(v, k !== 'MediaUrl');
  }
  return out;
}

/** Form decoding; `+` is a space except in MediaUrl, where an unencoded URL means a literal plus. */
function decode(s: string, plusIsSpace: boolean): string {
  if (s.indexOf('%') < 0 && (!plusIsSpace || s.indexOf('+') < 0)) return s;
  const t = plusIsSpace ? s.replace(/\+/g, ' ') : s;
  try {
    return decodeURIComponent(t);
  } catch {
    return t;
  }
}
