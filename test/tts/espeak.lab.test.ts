import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseFile } from 'music-metadata';
import { EspeakProvider } from '../../src/tts/espeak';
import { tempDir } from './helpers';

const SENTENCE = 'The doorbell rang at the front door, please have a look.';

let tmp: ReturnType<typeof tempDir>;
beforeAll(() => {
  tmp = tempDir('espeak');
});
afterAll(() => tmp.remove());

async function expectSpokenWav(file: string, minSeconds: number): Promise<void> {
  const bytes = readFileSync(file);
  expect(bytes.subarray(0, 4).toString('latin1')).toBe('RIFF');
  expect(bytes.subarray(8, 12).toString('latin1')).toBe('WAVE');
  const { format } = await parseFile(file);
  expect(format.container).toBe('WAVE');
  expect(format.sampleRate).toBe(22050);
  expect(format.duration).toBeGreaterThan(minSeconds);
}

describe('espeak-ng system binary', () => {
  test('is installed (CI installs the espeak-ng package)', () => {
    let version = '';
    try {
      version = execFileSync('espeak-ng', ['--version'], { encoding: 'utf8' });
    } catch (e) {
      throw new Error(`the espeak-ng binary is required by these tests: apt-get install espeak-ng (${(e as Error).message})`);
    }
    expect(version).toMatch(/eSpeak NG/);
  });

  test('auto mode picks it', async () => {
    await expect(new EspeakProvider().resolvedMode()).resolves.toBe('binary');
  });

  test('writes a WAV of the sentence', async () => {
    const out = join(tmp.dir, 'binary.wav');
    await new EspeakProvider({ mode: 'binary' }).synthesize(SENTENCE, 'en', out);
    await expectSpokenWav(out, 0.3);
  });

  test('speaks text that looks like an option instead of obeying it', async () => {
    const out = join(tmp.dir, 'dash.wav');
    await new EspeakProvider({ mode: 'binary' }).synthesize('--help -v xx', 'en-us', out);
    await expectSpokenWav(out, 0.3);
  });

  test("an unknown voice rejects with espeak-ng's reason", async () => {
    await expect(new EspeakProvider({ mode: 'binary' }).synthesize('hello', 'zz-nope', join(tmp.dir, 'x.wav'))).rejects.toThrow(
      /voice does not exist/,
    );
  });

  test('a missing binary rejects with a hint', async () => {
    const provider = new EspeakProvider({ mode: 'binary', binaryPath: '/nonexistent/espeak-ng' });
    await expect(provider.synthesize('hello', 'en', join(tmp.dir, 'y.wav'))).rejects.toThrow(/binary not found.*mode 'wasm'/);
  });
});

describe('espeak-ng WebAssembly build', () => {
  test('auto mode falls back to it when the binary is missing', async () => {
    await expect(new EspeakProvider({ binaryPath: '/nonexistent/espeak-ng' }).resolvedMode()).resolves.toBe('wasm');
  });

  test('writes a WAV of the sentence', async () => {
    const out = join(tmp.dir, 'wasm.wav');
    await new EspeakProvider({ mode: 'wasm' }).synthesize(SENTENCE, 'en', out);
    await expectSpokenWav(out, 0.3);
  });

  test('handles non-ASCII text and a VoiceRSS-style voice', async () => {
    const out = join(tmp.dir, 'wasm-de.wav');
    await new EspeakProvider({ mode: 'wasm' }).synthesize('Grüße aus Köln, schöne Straße!', 'de:Hans', out);
    await expectSpokenWav(out, 0.3);
  });

  test('speaks text that looks like an option instead of obeying it', async () => {
    const out = join(tmp.dir, 'wasm-dash.wav');
    await new EspeakProvider({ mode: 'wasm' }).synthesize('--help -v xx', 'en-us', out);
    await expectSpokenWav(out, 0.3);
  });

  test("an unknown voice rejects with espeak-ng's reason", async () => {
    await expect(new EspeakProvider({ mode: 'wasm' }).synthesize('hello', 'zz-nope', join(tmp.dir, 'z.wav'))).rejects.toThrow(/voice does not exist/);
  });

  test('a voice that is not a voice name is refused before anything runs', async () => {
    await expect(new EspeakProvider({ mode: 'wasm' }).synthesize('hello', 'en; rm -rf /', join(tmp.dir, 'w.wav'))).rejects.toThrow(
      /invalid espeak voice/,
    );
  });
});
