import { open } from 'node:fs/promises';

/**
 * Duration of a PCM WAV from its RIFF header: data bytes / byte rate. WAV is what the hub
 * makes itself (espeak-ng, sample tracks), and reading 4 KB beats starting a parser for it.
 * Returns undefined for anything that is not a plain RIFF/WAVE with fmt and data chunks.
 */
export function wavDurationFromBuffer(buf: Buffer, totalSize = buf.length): number | undefined {
  if (buf.length < 12 || buf.toString('latin1', 0, 4) !== 'RIFF' || buf.toString('latin1', 8, 12) !== 'WAVE') return undefined;
  let byteRate: number | undefined;
  for (let pos = 12; pos + 8 <= buf.length;) {
    const id = buf.toString('latin1', pos, pos + 4);
    const size = buf.readUInt32LE(pos + 4);
    if (id === 'fmt ' && pos + 16 <= buf.length) byteRate = buf.readUInt32LE(pos + 8 + 8);
    if (id === 'data') {
      if (!byteRate) return undefined;
      // Streaming writers leave 0 or 0xFFFFFFFF as the size: the file's length says more.
      const available = totalSize - (pos + 8);
      const bytes = size === 0 || size === 0xffffffff || size > available ? available : size;
      return bytes / byteRate;
    }
    pos += 8 + size + (size & 1);
  }
  return undefined;
}

export async function wavDuration(file: string): Promise<number | undefined> {
  const fh = await open(file, 'r');
  try {
    const { size } = await fh.stat();
    const head = Buffer.alloc(Math.min(size, 4096));
    await fh.read(head, 0, head.length, 0);
    return wavDurationFromBuffer(head, size);
  } finally {
    await fh.close();
  }
}
