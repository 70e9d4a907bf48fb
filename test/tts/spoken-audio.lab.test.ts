/**
 * What the engines make of src/tts/spoken-text.ts (issue 30): both get the spoken form (the
 * audio of "at 14:05" is the audio of "at fourteen oh five", byte for byte), and a full stop
 * or a bare line break is a pause a listener hears, in both.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EspeakProvider } from '../../src/tts/espeak';
import { FestivalProvider } from '../../src/tts/festival';
import type { TtsProvider } from '../../src/tts/provider';
import { speechStats, tempDir } from './helpers';

let tmp: ReturnType<typeof tempDir>;
beforeAll(() => {
  tmp = tempDir('spoken-audio');
});
afterAll(() => tmp.remove());

const ENGINES: Array<[string, () => TtsProvider]> = [
  ['espeak', () => new EspeakProvider({ mode: 'binary' })],
  ['festival', () => new FestivalProvider()],
];

let n = 0;
async function say(provider: TtsProvider, text: string): Promise<Buffer> {
  const out = join(tmp.dir, `${provider.name}-${n++}.wav`);
  await provider.synthesize(text, 'en', out);
  return readFileSync(out);
}

describe.each(ENGINES)('%s', (_name, make) => {
  const provider = make();

  test.each([
    ['The train leaves at 14:05.', 'The train leaves at fourteen oh five.'],
    ['Dinner at 7:30, it is 21°C and 50% cloudy.', 'Dinner at seven thirty, it is twenty one degrees Celsius and fifty percent cloudy.'],
    ['In 2026, 1,200 people paid $3.50.', 'In twenty twenty six, one thousand two hundred people paid three dollars and fifty cents.'],
  ])('%j is spoken exactly as %j', async (figures, words) => {
    const [a, b] = [await say(provider, figures), await say(provider, words)];
    expect(a.length).toBeGreaterThan(10_000);
    expect(a.equals(b)).toBe(true);
  });

  test('a full stop and a bare line break are pauses; without them the words run on', async () => {
    const stops = speechStats(await say(provider, 'Dinner is ready. Please come down.'));
    const lines = speechStats(await say(provider, 'Dinner is ready\nPlease come down'));
    const runOn = speechStats(await say(provider, 'Dinner is ready please come down'));
    expect(stops.longestPauseMs).toBeGreaterThanOrEqual(200);
    expect(lines.longestPauseMs).toBeGreaterThanOrEqual(200);
    expect(runOn.longestPauseMs).toBeLessThan(stops.longestPauseMs);
  });
});
