/**
 * Text as people say it, for the offline engines (espeak-ng, festival): times, numbers,
 * years, temperatures, percentages and money written in figures become English words, so
 * both engines read them the same way and the way a person would ("at 7:30" → "at seven
 * thirty", not espeak's "seven thirty" but "fourteen zero five" for 14:05, nor festival's
 * "two one" for 21°C). Punctuation that makes a pause is kept; a line break with none gets a
 * full stop, so lines are not run together.
 *
 * Decisions (docs/text-to-speech.md):
 *  - a 24-hour time is read as written: 14:05 → "fourteen oh five", 18:00 → "eighteen hundred";
 *    7:00 → "seven o'clock"; 00:00 → "midnight", 00:30 → "twelve thirty a.m.";
 *  - a bare four-digit number from 1100 to 2099 is a year: 2026 → "twenty twenty six",
 *    2005 → "two thousand five"; a count is written with a comma (2,026) to be read as one;
 *  - decimals read their digits one by one: 3.25 → "three point two five";
 *  - a number with a leading zero, or longer than 15 digits, is read digit by digit (codes).
 * Only English voices get this: the words are English (other languages go to espeak as written).
 */
import { toWords, toWordsOrdinal } from 'number-to-words';

const DIGITS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];

/** Whether a voice speaks English: 'en', 'en-us', 'en-gb:Linda', or a festival voice. */
export function speaksEnglish(voice: string, engine: 'espeak' | 'festival'): boolean {
  if (engine === 'festival') return true;
  return /^en(?:$|[-_+:/])/i.test(voice.trim());
}

/** number-to-words writes "one thousand, two hundred" and "twenty-six": no comma (a pause), no hyphen. */
function words(n: number): string {
  return toWords(n).replace(/,/g, '').replace(/-/g, ' ');
}

function digitByDigit(digits: string): string {
  return [...digits].map((d) => DIGITS[Number(d)]).join(' ');
}

/** An unsigned integer written in figures (no separators). */
function integerWords(digits: string): string {
  if ((digits.length > 1 && digits.startsWith('0')) || digits.length > 15) return digitByDigit(digits);
  return words(Number(digits));
}

/** '1,200.5' or '-3' → words; the sign is read "minus". */
function numberWords(written: string): string {
  const negative = /^[-−]/.test(written);
  const [whole, fraction] = written.replace(/^[-−]/, '').replace(/,/g, '').split('.');
  let out = integerWords(whole || '0');
  if (fraction) out += ` point ${digitByDigit(fraction)}`;
  return negative ? `minus ${out}` : out;
}

function yearWords(year: number): string {
  if (year >= 2000 && year < 2010) return words(year);
  const hi = Math.floor(year / 100);
  const lo = year % 100;
  if (lo === 0) return `${words(hi)} hundred`;
  return `${words(hi)} ${lo < 10 ? `oh ${words(lo)}` : words(lo)}`;
}

function minuteWords(m: number): string {
  return m < 10 ? `oh ${words(m)}` : words(m);
}

/** A clock time; `half` is 'a.m.'/'p.m.' when the text said so. */
function timeWords(h: number, m: number, half?: string): string {
  if (half) return `${words(h)}${m ? ` ${minuteWords(m)}` : ''} ${half}`;
  if (h === 0) return m === 0 ? 'midnight' : `twelve ${minuteWords(m)} a.m.`;
  if (m === 0) return h <= 12 ? `${words(h)} o'clock` : `${words(h)} hundred`;
  return `${words(h)} ${minuteWords(m)}`;
}

const UNITS: Record<string, [string, string, string, string]> = {
  $: ['dollar', 'dollars', 'cent', 'cents'],
  '€': ['euro', 'euros', 'cent', 'cents'],
  '£': ['pound', 'pounds', 'penny', 'pence'],
};

function moneyWords(symbol: string, whole: string, cents?: string): string {
  const [one, many, centOne, centMany] = UNITS[symbol];
  const n = Number(whole.replace(/,/g, ''));
  const c = cents ? Number(cents) : 0;
  const centWords = `${words(c)} ${c === 1 ? centOne : centMany}`;
  if (n === 0 && c) return centWords;
  return `${numberWords(whole)} ${n === 1 ? one : many}${c ? ` and ${centWords}` : ''}`;
}

/** The decade of a year: 1990s → "nineteen nineties". */
function decadeWords(year: number): string {
  const y = yearWords(year);
  return y.endsWith('y') ? `${y.slice(0, -1)}ies` : `${y}s`;
}

// A number as written, where a word would start (not "mp3", nor the "2" of "1.2.3"): an
// optional sign, thousands separators, a decimal part.
const NUM = String.raw`(?<![\w.,])[-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?`;
// … and where it ends (a list like 1,2,3 or a version like 1.2.3 is left to the engine).
const END = String.raw`(?!\d|[.,]\d)`;

/** The rules, in order: each turns its figures into words, so later ones never see them. */
const RULES: Array<[RegExp, (...m: string[]) => string]> = [
  // A line break with no punctuation before it would run two lines into one sentence.
  [/([^\s.!?,;:])[ \t]*\r?\n(?=\s*\S)/g, (_m, last) => `${last}.\n`],
  // Money: $5.50 → "five dollars and fifty cents".
  [/([$€£])\s?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d{2}))?(?![\d.]\d)/g, (_m, sym, whole, cents) => moneyWords(sym, whole, cents)],
  // Temperatures: 21°C, -5 °F, 30°.
  [
    new RegExp(String.raw`(${NUM})${END}\s?°\s?(?:([CF])\b)?`, 'g'),
    (_m, n, scale) =>
      `${numberWords(n)} ${Number(n.replace(/,/g, '')) === 1 ? 'degree' : 'degrees'}${scale ? (scale === 'C' ? ' Celsius' : ' Fahrenheit') : ''}`,
  ],
  // 12-hour times: 7am, 7 pm, 7:30 p.m., 7.30pm (the full stop of "p.m." is kept: it may end the sentence).
  [
    /(?<![\d:.,])(1[0-2]|0?[1-9])(?:[:.]([0-5]\d))?\s?([ap])\.?\s?m\b\.?/gi,
    (_m, h, m, half) => timeWords(Number(h), Number(m ?? 0), `${half.toLowerCase()}.m.`),
  ],
  // Times with seconds: 12:34:56 → "twelve thirty four and fifty six seconds".
  [
    /(?<![\d:.,])([01]?\d|2[0-3]):([0-5]\d):([0-5]\d)(?![:\d])/g,
    (_m, h, m, sec) => `${timeWords(Number(h), Number(m))} and ${words(Number(sec))} ${Number(sec) === 1 ? 'second' : 'seconds'}`,
  ],
  // 24-hour (or unmarked) times: 7:30, 14:05, 00:00; not 1:2 (a score, read as numbers).
  [/(?<![\d:.,])([01]?\d|2[0-3]):([0-5]\d)(?![:\d])/g, (_m, h, m) => timeWords(Number(h), Number(m))],
  // Percentages: 50%, 3.5 %.
  [new RegExp(String.raw`(${NUM})${END}\s?%`, 'g'), (_m, n) => `${numberWords(n)} percent`],
  // Ordinals: 1st, 22nd, 3rd, 5th.
  [/(?<![\w.,])(\d{1,15})(st|nd|rd|th)\b/gi, (_m, n) => toWordsOrdinal(Number(n)).replace(/,/g, '').replace(/-/g, ' ')],
  // Decades: the 1990s.
  [/(?<![\d.,])(1[1-9]\d0|20\d0)s\b/g, (_m, y) => decadeWords(Number(y))],
  // Years: a bare 1100–2099 (not a part of a longer figure, a decimal or a separated number).
  [/(?<![\w.,−-])(1[1-9]\d\d|20\d\d)(?![\d]|[.,]\d)/g, (_m, y) => yearWords(Number(y))],
  // Every other number: 1,200 → "one thousand two hundred", 3.5 → "three point five", -3 → "minus three".
  [new RegExp(String.raw`(${NUM})${END}`, 'g'), (_m, n) => numberWords(n)],
];

/** The text with figures in words, for an English voice (see the module comment). */
export function spokenText(text: string): string {
  let out = text;
  for (const [pattern, replace] of RULES) out = out.replace(pattern, replace as (substring: string, ...args: string[]) => string);
  return out;
}

/** What an engine gets: the spoken form for English voices, the text as written otherwise. */
export function textForEngine(text: string, voice: string, engine: 'espeak' | 'festival'): string {
  return speaksEnglish(voice, engine) ? spokenText(text) : text;
}

/** Part of the TTS cache key: a change to these rules is new audio for the same text (bump it there). */
export { SPOKEN_TEXT_REVISION } from './spoken-text-revision';
