import { copyFileSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { scanProgressLine } from '../../src/cli/scan-progress';
import { MediaLibrary, type ScanProgress } from '../../src/media/library';
import { ensureSampleMedia } from '../../src/media/samples';
import { captureLogger, tempDir } from './helpers';

describe('media scan progress', () => {
  const tmp = tempDir();
  const music = path.join(tmp.dir, 'music');

  beforeAll(async () => {
    const samples = path.join(tmp.dir, 'samples');
    await ensureSampleMedia(samples);
    mkdirSync(music, { recursive: true });
    // 12 tracks (copies of the samples) and 3 files that are not audio.
    const wavs = readdirSync(samples).filter((f) => f.endsWith('.wav'));
    for (let i = 0; i < 4; i++) for (const w of wavs) copyFileSync(path.join(samples, w), path.join(music, `${i}-${w}`));
    for (let i = 0; i < 3; i++) writeFileSync(path.join(music, `notes-${i}.txt`), 'not audio');
  });
  afterAll(() => tmp.cleanup());

  it('reports how a scan gets on, ending with the totals', async () => {
    const seen: ScanProgress[] = [];
    const library = new MediaLibrary({ folders: [music], logger: captureLogger().logger, onProgress: (p) => seen.push(p) });
    await library.scan();
    const last = seen[seen.length - 1];
    expect(last).toMatchObject({ done: true, files: 15, items: 12 });
    expect(library.list()).toHaveLength(12);
    // Counts only grow, and only the last report says done.
    for (let i = 1; i < seen.length; i++) expect(seen[i].files).toBeGreaterThanOrEqual(seen[i - 1].files);
    expect(seen.filter((p) => p.done)).toHaveLength(1);
  });

  it('a progress display that throws does not fail the scan', async () => {
    const library = new MediaLibrary({
      folders: [music],
      logger: captureLogger().logger,
      onProgress: () => {
        throw new Error('display bug');
      },
    });
    await library.scan();
    expect(library.list()).toHaveLength(12);
  });
});

describe('the terminal progress line', () => {
  function stream(isTTY: boolean) {
    const writes: string[] = [];
    const out = Object.assign(
      new Writable({
        write(chunk, _e, cb) {
          writes.push(String(chunk));
          cb();
        },
      }),
      { isTTY },
    );
    return { out, writes };
  }

  it('appears once a scan takes a while, is rewritten in place, and is erased at the end', () => {
    const { out, writes } = stream(true);
    const show = scanProgressLine(out);
    show({ files: 10, items: 9, elapsedMs: 300, done: false });
    expect(writes).toEqual([]);
    show({ files: 4000, items: 3900, elapsedMs: 1500, done: false });
    show({ files: 8000, items: 7800, elapsedMs: 3000, done: false });
    expect(writes).toEqual([
      '\r\x1b[K  Scanning media: 4000 files, 3900 items so far …',
      '\r\x1b[K  Scanning media: 8000 files, 7800 items so far …',
    ]);
    show({ files: 9000, items: 8800, elapsedMs: 3500, done: true });
    expect(writes[writes.length - 1]).toBe('\r\x1b[K');
  });

  it('a short scan leaves no trace, and nothing is written where stdout is no terminal', () => {
    const tty = stream(true);
    const quick = scanProgressLine(tty.out);
    quick({ files: 3, items: 3, elapsedMs: 20, done: false });
    quick({ files: 3, items: 3, elapsedMs: 40, done: true });
    expect(tty.writes).toEqual([]);
    const file = stream(false);
    const show = scanProgressLine(file.out);
    show({ files: 4000, items: 3900, elapsedMs: 5000, done: false });
    show({ files: 4000, items: 3900, elapsedMs: 6000, done: true });
    expect(file.writes).toEqual([]);
  });
});
