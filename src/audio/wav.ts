/** Tags written to a WAV file's RIFF LIST/INFO chunk. */
export interface WavTags {
  title: string;
  artist: string;
  album: string;
}

/** RIFF CSET code page for UTF-8; without it readers take INFO text as ISO 8859-1. */
const CODE_PAGE_UTF8 = 65001;

function chunk(id: string, body: Buffer): Buffer {
  const header = Buffer.alloc(8);
  header.write(id, 0, 4, 'latin1');
  header.writeUInt32LE(body.length, 4);
  // RIFF chunks are word aligned; the pad byte is not counted in the size.
  return Buffer.concat([header, body, Buffer.alloc(body.length % 2)]);
}

function infoText(text: string): Buffer {
  return Buffer.concat([Buffer.from(text, 'utf8'), Buffer.from([0])]);
}

/**
 * A 16-bit PCM mono WAV file with INFO tags (INAM title, IART artist, IPRD album) and a
 * CSET chunk declaring them UTF-8, so titles may hold characters like '—'.
 */
export function encodeWav(samples: Int16Array, sampleRate: number, tags: WavTags): Buffer {
  const fmt = Buffer.alloc(16);
  fmt.writeUInt16LE(1, 0); // PCM
  fmt.writeUInt16LE(1, 2); // mono
  fmt.writeUInt32LE(sampleRate, 4);
  fmt.writeUInt32LE(sampleRate * 2, 8); // bytes per second
  fmt.writeUInt16LE(2, 12); // block align
  fmt.writeUInt16LE(16, 14); // bits per sample

  const cset = Buffer.alloc(8); // code page, country, language, dialect
  cset.writeUInt16LE(CODE_PAGE_UTF8, 0);

  const info = Buffer.concat([
    Buffer.from('INFO', 'latin1'),
    chunk('INAM', infoText(tags.title)),
    chunk('IART', infoText(tags.artist)),
    chunk('IPRD', infoText(tags.album)),
  ]);

  const pcm = Buffer.alloc(samples.length * 2);
  for (let i = 0; i < samples.length; i++) pcm.writeInt16LE(samples[i], i * 2);

  const body = Buffer.concat([Buffer.from('WAVE', 'latin1'), chunk('fmt ', fmt), chunk('CSET', cset), chunk('LIST', info), chunk('data', pcm)]);
  return chunk('RIFF', body);
}
