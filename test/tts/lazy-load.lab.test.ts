/**
 * A default hub does not load its text-to-speech engine (espeak's code, the spoken-text rules,
 * number-to-words) when it starts, only with the first synthesis (issue 29: idle RSS). Run in
 * a child process of the built package (dist/), as a library user runs it.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBuilt, ROOT } from '../helpers/cli';

const PROBE = `
const { createHub } = require(${JSON.stringify(ROOT)});
const [dataDir] = process.argv.slice(1);
const loaded = () => {
  const files = Object.keys(require.cache).map((f) => f.replace(/\\\\/g, '/'));
  const has = (re) => files.some((f) => re.test(f));
  return { espeak: has(/\\/dist\\/tts\\/espeak\\.js$/), spokenText: has(/\\/dist\\/tts\\/spoken-text\\.js$/), numberToWords: has(/node_modules\\/number-to-words\\//) };
};
(async () => {
  const hub = createHub({ dataDir, server: { host: '127.0.0.1', port: 0 }, media: { samples: false }, log: { level: 'silent' } });
  await hub.start();
  const atStart = loaded();
  const audio = await hub.tts.speak('Dinner is ready');
  const afterSpeak = loaded();
  await hub.stop();
  console.log(JSON.stringify({ atStart, afterSpeak, contentType: audio.contentType }));
})().catch((e) => { console.error(e); process.exit(1); });
`;

let dataDir: string;
beforeAll(async () => {
  await ensureBuilt();
  dataDir = await mkdtemp(join(tmpdir(), 'speakerhub-tts-lazy-'));
}, 120_000);
afterAll(async () => {
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

test('started: no TTS engine code; the first synthesis loads it and speaks', async () => {
  const out = await new Promise<Record<string, unknown>>((resolve, reject) => {
    execFile(process.execPath, ['-e', PROBE, dataDir], { cwd: ROOT, timeout: 90_000 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`${err.message}\n${stderr}`));
      resolve(JSON.parse(stdout.trim().split('\n').pop()!));
    });
  });
  expect(out).toEqual({
    atStart: { espeak: false, spokenText: false, numberToWords: false },
    afterSpeak: { espeak: true, spokenText: true, numberToWords: true },
    contentType: 'audio/wav',
  });
}, 120_000);
