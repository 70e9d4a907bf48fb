import { parseRange } from '../../src/media/range';

describe('parseRange', () => {
  const size = 1000;

  it('reads a closed range, clamping the end to the file', () => {
    expect(parseRange('bytes=100-199', size)).toEqual({ start: 100, end: 199 });
    expect(parseRange('bytes=900-5000', size)).toEqual({ start: 900, end: 999 });
    expect(parseRange('BYTES = 0 - 0', size)).toEqual({ start: 0, end: 0 });
  });

  it('reads open and suffix ranges', () => {
    expect(parseRange('bytes=990-', size)).toEqual({ start: 990, end: 999 });
    expect(parseRange('bytes=-50', size)).toEqual({ start: 950, end: 999 });
    expect(parseRange('bytes=-5000', size)).toEqual({ start: 0, end: 999 });
  });

  it('says unsatisfiable for ranges past the end, an empty suffix, or an empty file', () => {
    expect(parseRange('bytes=1000-', size)).toBe('unsatisfiable');
    expect(parseRange('bytes=1000-1001', size)).toBe('unsatisfiable');
    expect(parseRange('bytes=-0', size)).toBe('unsatisfiable');
    expect(parseRange('bytes=0-', 0)).toBe('unsatisfiable');
    expect(parseRange('bytes=-10', 0)).toBe('unsatisfiable');
  });

  it('ignores absent, malformed, reversed, multiple and non-byte ranges', () => {
    for (const header of [undefined, '', 'bytes=', 'bytes=-', 'bytes=5-1', 'bytes=a-b', 'items=0-1', 'bytes=0-1,5-6']) {
      expect(parseRange(header, size)).toBeUndefined();
    }
  });
});
