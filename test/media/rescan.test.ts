/**
 * The library follows its folders: a watcher rescans after changes settle, rescan_media
 * rescans on demand, and a configured folder that does not exist stops the start with a
 * message naming it.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError } from '../../src/hub-config';
import { createHub } from '../../src/hub';
import { createLogger } from '../../src/logger';
import { ensureSampleMedia } from '../../src/media/samples';
import { SHARED_SAMPLES, startHub } from '../helpers/hub';
import { eventually } from '../helpers/wait';

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'speakerhub-rescan-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

let samples: string[];
beforeAll(async () => {
  await ensureSampleMedia(SHARED_SAMPLES);
  samples = readdirSync(SHARED_SAMPLES).filter((f) => f.endsWith('.wav'));
  expect(samples.length).toBeGreaterThanOrEqual(2);
});

test('a file copied into a watched folder is listed after the debounce; a deleted one goes', async () => {
  const dir = tmp();
  copyFileSync(path.join(SHARED_SAMPLES, samples[0]), path.join(dir, samples[0]));
  const h = await startHub({ media: { samples: false, folders: [dir], watchDebounceMs: 100 } });
  try {
    expect((await h.op('media_list')).MediaList).toHaveLength(1);
    const sub = path.join(dir, 'new album');
    mkdirSync(sub);
    copyFileSync(path.join(SHARED_SAMPLES, samples[1]), path.join(sub, samples[1]));
    await eventually(async () => (await h.op('media_list')).MediaList.length === 2, 10_000, 'the copied file to be listed');
    unlinkSync(path.join(dir, samples[0]));
    await eventually(async () => (await h.op('media_list')).MediaList.length === 1, 10_000, 'the deleted file to leave the list');
  } finally {
    await h.close();
  }
});

test('rescan_media lists new files at once (watching off) and answers the count', async () => {
  const dir = tmp();
  const h = await startHub({ media: { samples: false, folders: [dir], watch: false } });
  try {
    expect((await h.op('media_list')).MediaList).toHaveLength(0);
    for (const f of samples) copyFileSync(path.join(SHARED_SAMPLES, f), path.join(dir, f));
    expect(await h.op('rescan_media')).toEqual({ Result: 'true', MediaCount: String(samples.length) });
    expect((await h.op('media_list')).MediaList).toHaveLength(samples.length);
    // Concurrent requests share scans and all see the full library.
    const all = await Promise.all(Array.from({ length: 10 }, () => h.op('rescan_media')));
    for (const r of all) expect(r).toEqual({ Result: 'true', MediaCount: String(samples.length) });
  } finally {
    await h.close();
  }
});

test('a configured folder that does not exist stops the start with its name and a fix', async () => {
  const data = tmp();
  const missing = path.join(data, 'no-such-music');
  const hub = createHub(
    { dataDir: data, media: { folders: [missing], samples: false }, server: { enabled: false } },
    { logger: createLogger({ level: 'silent' }) },
  );
  const e = await hub.start().then(
    () => undefined,
    (err: unknown) => err,
  );
  await hub.stop();
  expect(e).toBeInstanceOf(ConfigError);
  expect((e as Error).message).toContain(`media.folders[0]: ${missing} does not exist`);
});
