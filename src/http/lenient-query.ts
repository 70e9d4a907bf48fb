/**
 * Query-string parsing that copes with the clients in the wild (compatibility.md): values
 * sent unencoded, so a MediaUrl can itself contain `?` and `&`, and Text can hold spaces
 * and quotes. A `&` only starts a new parameter when what follows is `Name=` for a name
 * the operation knows; otherwise it belongs to the free-text value before it.
 */

const UNENCODED_URL = /^"?[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/** Parameters whose values may legitimately contain unencoded `&` and `=`. */
const FREE_TEXT = new Set(['MediaUrl', 'Text']);

/**
 * A name shaped like the API's parameters (DeviceName, Speaker): after Text it starts a
 * parameter of its own, so that a guessed one is refused as unknown instead of being spoken (a
 * MediaUrl keeps such pieces: a web URL's own query may use names like that).
 */
const PARAMETER_LIKE = /^[A-Z][A-Za-z]{1,39}$/;

export function parseLenientQuery(rawUrl: string, known: ReadonlySet<string>): Record<string, string> {
  const q = rawUrl.indexOf('?');
  const out: Record<string, string> = {};
  if (q < 0) return out;
  const length = rawUrl.length;
  // Most requests carry plain tokens and IDs: nothing to decode, so skip decoding entirely.
  const plain = rawUrl.indexOf('%', q) < 0 && rawUrl.indexOf('+', q) < 0;
  let current: string | undefined;
  // Pieces between '&'s, read by offset in the URL itself: nothing is cut out but the names
  // and values (this runs on every operation request, most of which carry one parameter).
  let start = q + 1;
  // The next '=' at or after start: found once and reused while pieces lie before it, so a
  // long run of pieces without '=' (free text full of '&') is scanned once, not once per piece.
  let nextEq = -1;
  while (start <= length) {
    let end = rawUrl.indexOf('&', start);
    if (end < 0) end = length;
    if (nextEq < start && nextEq !== -2) {
      nextEq = rawUrl.indexOf('=', start);
      if (nextEq < 0) nextEq = -2; // none left
    }
    const eq = nextEq >= 0 && nextEq < end ? nextEq : -1;
    const name = eq < 0 ? undefined : plain ? rawUrl.slice(start, eq) : decode(rawUrl.slice(start, eq), true);
    if (name !== undefined && (known.has(name) || !(current && FREE_TEXT.has(current)) || (current === 'Text' && PARAMETER_LIKE.test(name)))) {
      current = name;
      if (!(name in out)) out[name] = rawUrl.slice(eq + 1, end);
      else current = undefined; // a repeated parameter: the first one counts
    } else if (current && FREE_TEXT.has(current)) out[current] += `&${rawUrl.slice(start, end)}`;
    start = end + 1;
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
