import { copyFileSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { MediaLibrary } from '../../src/media/library';
import { ensureSampleMedia } from '../../src/media/samples';
import { FIXTURES, WARN, captureLogger, noise, tempDir } from './helpers';

describe('MediaLibrary', () => {
  const tmp = tempDir();
  const music = path.join(tmp.dir, 'music');
  const samples = path.join(tmp.dir, 'samples');
  const nested = path.join(music, 'Fixture Artist', 'Fixture Album', 'Disc 1');
  const corrupt = path.join(music, 'broken', 'corrupt.mp3');
  const dangling = path.join(music, 'dangling.mp3');
  const missing = path.join(tmp.dir, 'no-such-folder');
  const folders = [samples, music, missing];

  beforeAll(async () => {
    await ensureSampleMedia(samples);
    mkdirSync(nested, { recursive: true });
    copyFileSync(path.join(FIXTURES, 'tone.m4a'), path.join(nested, '01 Tone.m4a'));
    copyFileSync(path.join(FIXTURES, 'untagged-tone.mp3'), path.join(music, 'untagged-tone.mp3'));
    mkdirSync(path.dirname(corrupt));
    writeFileSync(corrupt, noise(200_000, 'corrupt'));
    writeFileSync(path.join(music, 'notes.txt'), 'not audio');
    writeFileSync(path.join(music, '._untagged-tone.mp3'), noise(4096, 'appledouble')); // hidden: ignored
    symlinkSync(music, path.join(nested, 'loop')); // a symlink loop must not hang the scan
    symlinkSync(path.join(tmp.dir, 'gone.mp3'), dangling);
  });
  afterAll(() => tmp.cleanup());

  it('lists samples and nested files with their tags, sorted by artist, album, title', async () => {
    const { logger } = captureLogger();
    const library = new MediaLibrary({ folders, logger });
    await library.scan();
    const items = library.list().map(({ title, artist, album, duration, contentType, file }) => ({
      title,
      artist,
      album,
      duration,
      contentType,
      file,
    }));
    expect(items).toEqual([
      // No tags: the file name is the title.
      { title: 'untagged-tone', artist: '', album: '', duration: 2, contentType: 'audio/mpeg', file: path.join(music, 'untagged-tone.mp3') },
      {
        title: 'Fixture Tone',
        artist: 'Fixture Artist',
        album: 'Fixture Album',
        duration: 3,
        contentType: 'audio/mp4',
        file: path.join(nested, '01 Tone.m4a'),
      },
      {
        title: 'Sample Tone 1 — Morning Chime',
        artist: 'SpeakerHub',
        album: 'SpeakerHub Samples',
        duration: 32,
        contentType: 'audio/wav',
        file: path.join(samples, 'sample-tone-1-morning-chime.wav'),
      },
      {
        title: 'Sample Tone 2 — Little Waltz',
        artist: 'SpeakerHub',
        album: 'SpeakerHub Samples',
        duration: 28,
        contentType: 'audio/wav',
        file: path.join(samples, 'sample-tone-2-little-waltz.wav'),
      },
      {
        title: 'Sample Tone 3 — Evening Walk',
        artist: 'SpeakerHub',
        album: 'SpeakerHub Samples',
        duration: 31,
        contentType: 'audio/wav',
        file: path.join(samples, 'sample-tone-3-evening-walk.wav'),
      },
    ]);
  });

  it('gives every item a digit-string PersistentID that survives a restart', async () => {
    const first = new MediaLibrary({ folders, logger: captureLogger().logger });
    await first.scan();
    const second = new MediaLibrary({ folders, logger: captureLogger().logger });
    await second.scan();

    const ids = first.list().map((i) => i.persistentId);
    for (const id of ids) {
      expect(id).toMatch(/^\d+$/);
      expect(BigInt(id)).toBeLessThan(1n << 63n);
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect(second.list().map((i) => i.persistentId)).toEqual(ids);
    for (const item of first.list()) expect(second.get(item.persistentId)).toEqual(item);
    expect(first.get('12345')).toBeUndefined();
  });

  it('skips a corrupt file, a dangling link and a missing folder with a warning each', async () => {
    const log = captureLogger();
    const library = new MediaLibrary({ folders, logger: log.logger });
    await library.scan();
    expect(library.list().some((i) => i.file === corrupt)).toBe(false);
    const warnings = log
      .entries()
      .filter((e) => e.level === WARN)
      .map((e) => e.msg);
    expect(warnings).toEqual(
      expect.arrayContaining([
        expect.stringContaining(`skipped ${corrupt}: no playable audio found`),
        expect.stringContaining(`skipped unreadable ${dangling}: ENOENT`),
        expect.stringContaining(`skipped unreadable ${missing}: ENOENT`),
      ]),
    );
    expect(warnings).toHaveLength(3); // nothing about notes.txt, the hidden file or the loop
  });

  it('rescan picks up added and removed files and keeps the other IDs', async () => {
    const library = new MediaLibrary({ folders, logger: captureLogger().logger });
    await library.scan();
    const before = new Map(library.list().map((i) => [i.file, i.persistentId]));
    const added = path.join(music, 'added', 'Another Tone.mp3');
    mkdirSync(path.dirname(added));
    copyFileSync(path.join(FIXTURES, 'untagged-tone.mp3'), added);
    rmSync(path.join(nested, '01 Tone.m4a'));
    try {
      await library.rescan();
      const after = new Map(library.list().map((i) => [i.file, i.persistentId]));
      expect(after.has(added)).toBe(true);
      expect(after.has(path.join(nested, '01 Tone.m4a'))).toBe(false);
      for (const [file, id] of after) if (before.has(file)) expect(id).toBe(before.get(file));
      expect(library.get(after.get(added) as string)?.title).toBe('Another Tone');
    } finally {
      rmSync(path.dirname(added), { recursive: true });
      copyFileSync(path.join(FIXTURES, 'tone.m4a'), path.join(nested, '01 Tone.m4a'));
    }
  });

  it('lists a file once when configured folders nest', async () => {
    const library = new MediaLibrary({ folders: [music, nested], logger: captureLogger().logger });
    await library.scan();
    expect(library.list().filter((i) => i.title === 'Fixture Tone')).toHaveLength(1);
  });

  it('serializes overlapping scans', async () => {
    const library = new MediaLibrary({ folders: [samples], logger: captureLogger().logger });
    await Promise.all([library.scan(), library.scan(), library.rescan()]);
    expect(library.list()).toHaveLength(3);
  });
});
