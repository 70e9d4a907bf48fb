/**
 * String equality in time that depends only on the length (a token's length is no secret):
 * for secrets compared on every request, without copying them into Buffers for timingSafeEqual.
 * Compares UTF-16 code units, so both sides must be in the same form.
 */
export function sameString(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
