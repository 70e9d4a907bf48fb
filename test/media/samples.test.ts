import { createHash } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseFile } from 'music-metadata';
import { SAMPLE_ALBUM, SAMPLE_ARTIST, ensureSampleMedia } from '../../src/media/samples';
import { tempDir } from './helpers';

describe('ensureSampleMedia', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  let files: string[];
  beforeAll(async () => {
    files = await ensureSampleMedia(path.join(tmp.dir, 'a', 'samples'));
  });

  it('writes three tagged 16-bit mono 22.05 kHz WAV tracks of 20-40 s', async () => {
    expect(files).toHaveLength(3);
    const titles: string[] = [];
    for (const file of files) {
      expect(path.isAbsolute(file)).toBe(true);
      const { format, common } = await parseFile(file);
      expect(format.container).toBe('WAVE');
      expect(format.codec).toBe('PCM');
      expect(format.sampleRate).toBe(22050);
      expect(format.numberOfChannels).toBe(1);
      expect(format.bitsPerSample).toBe(16);
      expect(format.duration).toBeGreaterThanOrEqual(20);
      expect(format.duration).toBeLessThanOrEqual(40);
      expect(common.artist).toBe(SAMPLE_ARTIST);
      expect(common.album).toBe(SAMPLE_ALBUM);
      titles.push(common.title ?? '');
    }
    expect(titles).toEqual(['Sample Tone 1 — Morning Chime', 'Sample Tone 2 — Little Waltz', 'Sample Tone 3 — Evening Walk']);
  });

  it('writes audible, different content per track', () => {
    const hashes = new Set<string>();
    for (const file of files) {
      const wav = readFileSync(file);
      const data = wav.indexOf('data', 12, 'latin1');
      let peak = 0;
      for (let i = data + 8; i + 1 < wav.length; i += 2) {
        const v = wav.readInt16LE(i);
        if (v > peak) peak = v;
        else if (-v > peak) peak = -v;
      }
      expect(peak).toBeGreaterThan(16000); // normalized to about -3 dBFS
      expect(peak).toBeLessThan(32767); // and not clipping
      hashes.add(createHash('sha256').update(wav).digest('hex'));
    }
    expect(hashes.size).toBe(3);
  });

  it('produces the same bytes every time', async () => {
    const again = await ensureSampleMedia(path.join(tmp.dir, 'b'));
    for (let i = 0; i < files.length; i++) {
      expect(readFileSync(again[i]).equals(readFileSync(files[i]))).toBe(true);
    }
  });

  it('renders the pinned bytes (catches accidental changes to the scores or the synth)', () => {
    const hashes = files.map((f) => createHash('sha256').update(readFileSync(f)).digest('hex'));
    expect(hashes).toEqual([
      'a4aef5c53e4e0dce26c21d2a978a5519de937591babe5a9637b4fcf33a57dafa',
      '09a4ee5a79ac482e7e98e0c486af174a0d170588629e594bca7be077cb876f69',
      'b79c1ca214616deeb96a17f3009dc6751c6ca71c8ca315a271c3704ed5ee2e0b',
    ]);
  });

  it('leaves existing files alone', async () => {
    const edited = files[1];
    writeFileSync(edited, 'user edit');
    const before = statSync(files[0]).mtimeMs;
    const again = await ensureSampleMedia(path.dirname(files[0]));
    expect(again).toEqual(files);
    expect(readFileSync(edited, 'utf8')).toBe('user edit');
    expect(statSync(files[0]).mtimeMs).toBe(before);
  });
});
