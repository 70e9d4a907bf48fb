import fc from 'fast-check';
import { compareTitles } from '../../src/media/title-order';

/** The order compareTitles must reproduce exactly, for ASCII and anything else. */
const collator = new Intl.Collator('en', { sensitivity: 'base', numeric: true });
const sign = (n: number) => Math.sign(n);

const ascii = fc.integer({ min: 0, max: 127 }).map((c) => String.fromCharCode(c));
// Digits, letters of both cases and the punctuation around them often, so runs and ties occur.
const likely = fc.constantFrom(
  ...['0', '0', '1', '2', '9', '10', '007', 'a', 'A', 'b', 'Z', ' ', '-', '_', '.', "'", '"', '$', '~', '\t', '\x01'],
  ...['\u00a0', '\u2013', '\u2014', '\u2018', '\u2019', '\u201c', '\u201d'],
);
const nameArb = fc.array(fc.oneof(ascii, likely), { maxLength: 12 }).map((parts) => parts.join(''));

describe('compareTitles (the media library order)', () => {
  it('orders ASCII names (and typical dashes and quotes) exactly as the ICU collator does', () => {
    fc.assert(
      fc.property(nameArb, nameArb, (a, b) => {
        expect(sign(compareTitles(a, b))).toBe(sign(collator.compare(a, b)));
      }),
      { numRuns: 20_000 },
    );
  });

  it('puts numbers in numeric order, ignores case and leading zeros', () => {
    expect(compareTitles('Track 2', 'Track 10')).toBeLessThan(0);
    expect(compareTitles('track 02', 'TRACK 2')).toBe(0);
    expect(compareTitles('Abba', 'abba')).toBe(0);
    expect(compareTitles('a-b', 'ab')).toBeLessThan(0);
    const names = [
      'Track 10',
      'track 9',
      'Alpha',
      '_intro',
      '2 Become 1',
      'Zulu',
      'alpha 1',
      'Sample Tone 1 \u2014 Morning Chime',
      'Sample Tone 1 - Morning',
    ];
    expect([...names].sort(compareTitles)).toEqual([...names].sort(collator.compare));
  });

  it('hands names with other characters to the collator (accents ignored)', () => {
    expect(compareTitles('Émilie', 'emilie')).toBe(0);
    expect(compareTitles('Ærø', 'Zebra')).toBe(sign(collator.compare('Ærø', 'Zebra')));
    expect(sign(compareTitles('Café 9', 'cafe 10'))).toBe(-1);
  });
});
