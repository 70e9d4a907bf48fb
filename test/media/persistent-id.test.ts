import path from 'node:path';
import { persistentIdFor } from '../../src/media/persistent-id';

describe('persistentIdFor', () => {
  it('is a stable 63-bit decimal string derived from folder and relative path', () => {
    const id = persistentIdFor('/music', path.join('Artist', 'Album', '01 Song.mp3'));
    expect(id).toMatch(/^\d+$/);
    expect(BigInt(id)).toBeLessThan(1n << 63n);
    expect(persistentIdFor('/music', 'Artist/Album/01 Song.mp3')).toBe(id);
    expect(persistentIdFor('/music/', path.join('Artist', 'Album', '01 Song.mp3'))).toBe(id);
  });

  it('differs for another file or another folder', () => {
    const id = persistentIdFor('/music', 'a.mp3');
    expect(persistentIdFor('/music', 'b.mp3')).not.toBe(id);
    expect(persistentIdFor('/other', 'a.mp3')).not.toBe(id);
    // The separator between folder and path is unambiguous.
    expect(persistentIdFor('/music/x', 'a.mp3')).not.toBe(persistentIdFor('/music', 'x/a.mp3'));
  });
});
