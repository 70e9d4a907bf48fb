/**
 * Numbers and times as people say them (issue 30): the one rule set both offline engines get
 * (src/tts/spoken-text.ts). What the engines then make of it is in spoken-audio.test.ts.
 */
import { speaksEnglish, spokenText, textForEngine } from '../../src/tts/spoken-text';

const CASES: Array<[string, string]> = [
  // Times
  ['Dinner at 7:30.', 'Dinner at seven thirty.'],
  ['The train leaves at 14:05', 'The train leaves at fourteen oh five'],
  ['at 10:00, 18:00 and 23:59', "at ten o'clock, eighteen hundred and twenty three fifty nine"],
  ['00:00 and 00:30', 'midnight and twelve thirty a.m.'],
  ['at 7pm. Then', 'at seven p.m. Then'],
  ['at 7 a.m. sharp', 'at seven a.m. sharp'],
  ['12:45 PM', 'twelve forty five p.m.'],
  ['at 9:05am', 'at nine oh five a.m.'],
  ['from 7.30pm', 'from seven thirty p.m.'],
  ['12:34:56 and 0:07:01', 'twelve thirty four and fifty six seconds and twelve oh seven a.m. and one second'],
  ['a score of 1:2', 'a score of one:two'],
  // Numbers
  ['3.5 kg', 'three point five kg'],
  ['0.25', 'zero point two five'],
  ['1,200 people', 'one thousand two hundred people'],
  ['2,500,000', 'two million five hundred thousand'],
  ['1200', 'twelve hundred'],
  ['42 and 105', 'forty two and one hundred five'],
  ['-3 and −4', 'minus three and minus four'],
  ['code 0123', 'code zero one two three'],
  ['1000000', 'one million'],
  ['It is 99.', 'It is ninety nine.'],
  ['the 1st, 22nd, 3rd and 5th', 'the first, twenty second, third and fifth'],
  // Years
  ['In 2026 we moved', 'In twenty twenty six we moved'],
  ['2005, 1905, 1900, 2010', 'two thousand five, nineteen oh five, nineteen hundred, twenty ten'],
  ['a count of 2,026', 'a count of two thousand twenty six'],
  ['the 1990s and the 2000s', 'the nineteen nineties and the two thousands'],
  ['2100', 'two thousand one hundred'],
  // Temperatures, percentages, money
  ['It is 21°C outside', 'It is twenty one degrees Celsius outside'],
  ['-5 °F tonight, 1°C, 30°', 'minus five degrees Fahrenheit tonight, one degree Celsius, thirty degrees'],
  ['50% done, 3.5 % up', 'fifty percent done, three point five percent up'],
  ['costs $5.50.', 'costs five dollars and fifty cents.'],
  ['only $0.99 or £0.01', 'only ninety nine cents or one penny'],
  ['£1, €20 and $1,200', 'one pound, twenty euros and one thousand two hundred dollars'],
  // Left to the engine: versions, lists, figures glued to letters
  ['Version 1.2.3, list 1,2,3, mp3, A4', 'Version 1.2.3, list 1,2,3, mp3, A4'],
  // Sentence pauses: punctuation stays; a bare line break becomes a full stop
  ['Dinner is ready. Come down!\nBring the dog\n\nNow', 'Dinner is ready. Come down!\nBring the dog.\n\nNow'],
];

test.each(CASES)('%j → %j', (text, spoken) => {
  expect(spokenText(text)).toBe(spoken);
});

test('text with no figures is unchanged, quotes and parentheses included', () => {
  const text = 'Someone is at the door ")(system "touch /tmp/x")';
  expect(spokenText(text)).toBe(text);
});

test('only English voices get English words; other languages reach espeak as written', () => {
  expect(['en', 'en-us', 'en-GB:Linda', 'en+f3'].map((v) => speaksEnglish(v, 'espeak'))).toEqual([true, true, true, true]);
  expect(['de', 'fr-fr', 'eo', 'mb/mb-de1'].map((v) => speaksEnglish(v, 'espeak'))).toEqual([false, false, false, false]);
  expect(textForEngine('Um 7:30 Uhr', 'de', 'espeak')).toBe('Um 7:30 Uhr');
  expect(textForEngine('at 7:30', 'en', 'espeak')).toBe('at seven thirty');
  // The festival voices here are English whatever the hub's voice setting says.
  expect(textForEngine('at 7:30', 'cmu_us_slt_arctic_hts', 'festival')).toBe('at seven thirty');
});

test('a long text full of figures comes out with none left', () => {
  const text = Array.from({ length: 1000 }, (_, i) => `${i}:${String(i % 60).padStart(2, '0')} ${i * 7}.5% `).join('');
  expect(spokenText(text)).not.toMatch(/\d/);
});
