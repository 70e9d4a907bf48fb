/**
 * The library's order of artists, albums and titles: as Intl.Collator('en', { sensitivity:
 * 'base', numeric: true }) orders them (case and accents ignored, "Track 2" before "Track 10").
 *
 * Creating that collator makes ICU read its collation tables, 2.5 MB of the hub's idle RSS, for
 * a library whose names are nearly always plain ASCII (with a dash or a curly quote). Those are
 * compared here, with the collator's own weights (test/media/title-order.test.ts checks them
 * against it), and the collator is created only when a name holds anything else.
 */

/**
 * Printable ASCII, and the dashes, quotes and no-break space of typical titles, in the
 * collator's primary order: one group per weight (' and \u2019 are equal, as a and A are), the
 * digits standing for the numeric weight every digit run has. The other ASCII control
 * characters are ignored; any other character goes to the collator.
 */
const ORDER = [
  '\t',
  '\n',
  '\v',
  '\f',
  '\r',
  ' \u00a0',
  '_',
  '-',
  '\u2013',
  '\u2014',
  ',',
  ';',
  ':',
  '!',
  '?',
  '.',
  "'\u2018\u2019",
  '"\u201c\u201d',
  '(',
  ')',
  '[',
  ']',
  '{',
  '}',
  '@',
  '*',
  '/',
  '\\',
  '&',
  '#',
  '%',
  '`',
  '^',
  '+',
  '<',
  '=',
  '>',
  '|',
  '~',
  '$',
  '0123456789',
];
const DIGIT_WEIGHT = ORDER.length - 1;
const IGNORED = 0;

/** Primary weight + 1 of each ASCII code unit (letters after the digits, a = A); 0 = ignorable. */
const WEIGHTS = new Uint8Array(128).fill(IGNORED);
/** The same for the few characters beyond ASCII in ORDER. */
const EXTRA = new Map<number, number>();
ORDER.forEach((group, i) => {
  for (const ch of group) {
    const c = ch.charCodeAt(0);
    if (c < 128) WEIGHTS[c] = i + 1;
    else EXTRA.set(c, i + 1);
  }
});
for (let i = 0; i < 26; i++) WEIGHTS[0x41 + i] = WEIGHTS[0x61 + i] = ORDER.length + 1 + i;
const weight = (c: number): number => (c < 128 ? WEIGHTS[c] : EXTRA.get(c)!);

let collator: Intl.Collator | undefined;

/** Negative, zero or positive as a sorts before, with or after b. */
export function compareTitles(a: string, b: string): number {
  if (!known(a) || !known(b)) {
    collator ??= new Intl.Collator('en', { sensitivity: 'base', numeric: true });
    return collator.compare(a, b);
  }
  return compareKnown(a, b);
}

/** True when every character of s has a weight in the tables above. */
function known(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 128 && !EXTRA.has(c)) return false;
  }
  return true;
}

function compareKnown(a: string, b: string): number {
  let i = 0;
  let j = 0;
  for (;;) {
    while (i < a.length && weight(a.charCodeAt(i)) === IGNORED) i++;
    while (j < b.length && weight(b.charCodeAt(j)) === IGNORED) j++;
    if (i >= a.length || j >= b.length) return (i < a.length ? 1 : 0) - (j < b.length ? 1 : 0);
    const wa = weight(a.charCodeAt(i)) - 1;
    const wb = weight(b.charCodeAt(j)) - 1;
    if (wa === DIGIT_WEIGHT && wb === DIGIT_WEIGHT) {
      // Digit runs compare by value: leading zeros do not count, then the longer run is larger.
      const ra = digitRun(a, i);
      const rb = digitRun(b, j);
      const na = ra.end - ra.start;
      const nb = rb.end - rb.start;
      if (na !== nb) return na - nb;
      for (let k = 0; k < na; k++) {
        const d = a.charCodeAt(ra.start + k) - b.charCodeAt(rb.start + k);
        if (d !== 0) return d;
      }
      i = ra.end;
      j = rb.end;
      continue;
    }
    if (wa !== wb) return wa - wb;
    i++;
    j++;
  }
}

/** The digit run starting at `from`: where its significant digits start and where it ends. */
function digitRun(s: string, from: number): { start: number; end: number } {
  let end = from;
  while (end < s.length && isDigit(s.charCodeAt(end))) end++;
  let start = from;
  while (start < end - 1 && s.charCodeAt(start) === 0x30) start++;
  if (start === end - 1 && s.charCodeAt(start) === 0x30) start = end;
  return { start, end };
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}
