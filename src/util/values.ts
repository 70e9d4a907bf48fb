/**
 * The one rule for the text values clients send (query strings, CLI flags, JSON front ends):
 * surrounding double quotes are not part of a value, and integers are written in decimal.
 */

/** Older clients wrap values in double quotes: trims, drops one pair of surrounding quotes, trims again. */
export function unquote(v: string): string {
  const t = v.trim();
  return t.length >= 2 && t.charCodeAt(0) === 34 && t.charCodeAt(t.length - 1) === 34 ? t.slice(1, -1).trim() : t;
}

/**
 * Decimal integers: an optional sign (`+5` is 5; a `+` that arrived unencoded in a query
 * string is a space and trimmed away, which gives the same number), then digits, leading
 * zeros allowed (`007` is 7). No fractions, exponents, hex or blanks inside.
 */
const INTEGER = /^[+-]?\d+$/;

/** Parses `text` as an integer in [min, max]; the message states the range either way. */
export function parseInteger(text: string, name: string, min: number, max: number): { ok: true; value: number } | { ok: false; message: string } {
  const t = unquote(text);
  const message = `${name} must be an integer from ${min} to ${max}${t === '' ? '' : ` (got ${JSON.stringify(t.slice(0, 40))})`}`;
  if (!INTEGER.test(t)) return { ok: false, message };
  // Digits beyond what a double holds exactly are out of any range we use: no rounding surprises.
  const digits = t.replace(/^[+-]?0*/, '');
  if (digits.length > 15) return { ok: false, message };
  const value = Number(t);
  if (value < min || value > max) return { ok: false, message };
  return { ok: true, value: value === 0 ? 0 : value }; // -0 → 0
}
