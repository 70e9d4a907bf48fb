/**
 * PCM WAV files as planar float samples, for the loudness work the hub does in process
 * (src/audio/loudness.ts): decoding 8/16/24/32-bit integer and 32/64-bit float WAV, and
 * writing 16-bit PCM with an optional comment (LIST/INFO/ICMT) that records what was done to
 * the samples, so that a file normalised once is recognised later from its header alone.
 */

export interface Pcm {
  rate: number;
  /** One Float32Array per channel, samples in [-1, 1]. */
  channels: Float32Array[];
}

export interface WavInfo {
  rate: number;
  channels: number;
  bits: number;
  float: boolean;
  /** Byte offset and length of the sample data. */
  dataOffset: number;
  dataBytes: number;
  /** The INFO comment (ICMT), when the header has one. */
  comment?: string;
}

export class WavFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WavFormatError';
  }
}

const WAVE_FORMAT_PCM = 1;
const WAVE_FORMAT_FLOAT = 3;
const WAVE_FORMAT_EXTENSIBLE = 0xfffe;

/**
 * The format and where the samples are, from a RIFF/WAVE header; undefined for anything else
 * (an MP3, a compressed WAV). `totalSize` is the file's length when `buf` is only its head.
 */
export function readWavInfo(buf: Buffer, totalSize = buf.length): WavInfo | undefined {
  if (buf.length < 12 || buf.toString('latin1', 0, 4) !== 'RIFF' || buf.toString('latin1', 8, 12) !== 'WAVE') return undefined;
  let fmt: Omit<WavInfo, 'dataOffset' | 'dataBytes'> | undefined;
  let comment: string | undefined;
  for (let pos = 12; pos + 8 <= buf.length;) {
    const id = buf.toString('latin1', pos, pos + 4);
    const size = buf.readUInt32LE(pos + 4);
    const body = pos + 8;
    if (id === 'fmt ' && body + 16 <= buf.length) {
      let tag = buf.readUInt16LE(body);
      // WAVE_FORMAT_EXTENSIBLE: the real format is the first two bytes of the sub-format GUID.
      if (tag === WAVE_FORMAT_EXTENSIBLE && size >= 40 && body + 26 <= buf.length) tag = buf.readUInt16LE(body + 24);
      const bits = buf.readUInt16LE(body + 14);
      const float = tag === WAVE_FORMAT_FLOAT;
      if (tag !== WAVE_FORMAT_PCM && !float) return undefined;
      if (float ? bits !== 32 && bits !== 64 : ![8, 16, 24, 32].includes(bits)) return undefined;
      const channels = buf.readUInt16LE(body + 2);
      const rate = buf.readUInt32LE(body + 4);
      if (channels < 1 || rate < 1000 || rate > 768_000) return undefined;
      fmt = { rate, channels, bits, float };
    } else if (id === 'LIST' && body + 4 <= buf.length && buf.toString('latin1', body, body + 4) === 'INFO') {
      const end = Math.min(buf.length, body + size);
      for (let p = body + 4; p + 8 <= end;) {
        const sub = buf.toString('latin1', p, p + 4);
        const len = buf.readUInt32LE(p + 4);
        if (sub === 'ICMT') comment = buf.toString('utf8', p + 8, Math.min(end, p + 8 + len)).replace(/\0+$/, '');
        p += 8 + len + (len & 1);
      }
    } else if (id === 'data') {
      if (!fmt) return undefined;
      // Streaming writers leave 0 or 0xFFFFFFFF as the size: the file's length says more.
      const available = Math.max(0, totalSize - body);
      const dataBytes = size === 0 || size === 0xffffffff || size > available ? available : size;
      return { ...fmt, dataOffset: body, dataBytes, comment };
    }
    pos = body + size + (size & 1);
  }
  return undefined;
}

/** Planar float samples of a whole PCM WAV file in memory, at most `maxFrames` of them. */
export function decodeWav(buf: Buffer, maxFrames = Infinity): Pcm {
  const info = readWavInfo(buf);
  if (!info) throw new WavFormatError('not a PCM WAV file');
  const bytes = info.bits / 8;
  const frameBytes = bytes * info.channels;
  const frames = Math.min(maxFrames, Math.floor(Math.min(info.dataBytes, buf.length - info.dataOffset) / frameBytes));
  const channels = Array.from({ length: info.channels }, () => new Float32Array(frames));
  if (info.bits === 16 && !info.float && (buf.byteOffset + info.dataOffset) % 2 === 0) {
    // The common case (espeak, the chime, what the hub writes) without a call per sample.
    const view = new Int16Array(buf.buffer, buf.byteOffset + info.dataOffset, frames * info.channels);
    for (let c = 0; c < info.channels; c++) {
      const out = channels[c];
      for (let i = 0, j = c; i < frames; i++, j += info.channels) out[i] = view[j] / 32768;
    }
    return { rate: info.rate, channels };
  }
  const read = sampleReader(buf, info);
  for (let c = 0; c < info.channels; c++) {
    const out = channels[c];
    for (let i = 0, at = info.dataOffset + c * bytes; i < frames; i++, at += frameBytes) out[i] = read(at);
  }
  return { rate: info.rate, channels };
}

/** Reads one sample at a byte offset as a float in −1…1, for the file's sample format. */
export function sampleReader(buf: Buffer, info: WavInfo): (at: number) => number {
  if (info.float) return info.bits === 32 ? (at) => buf.readFloatLE(at) : (at) => buf.readDoubleLE(at);
  switch (info.bits) {
    case 8:
      return (at) => (buf[at] - 128) / 128;
    case 16:
      return (at) => buf.readInt16LE(at) / 32768;
    case 24:
      return (at) => buf.readIntLE(at, 3) / 8_388_608;
    default:
      return (at) => buf.readInt32LE(at) / 2_147_483_648;
  }
}

/** A 16-bit PCM WAV file of the samples (clamped, rounded), with `comment` as its INFO ICMT when given. */
export function encodeWav16(pcm: Pcm, comment?: string): Buffer {
  const nch = pcm.channels.length;
  const frames = pcm.channels[0]?.length ?? 0;
  const fmt = Buffer.alloc(16);
  fmt.writeUInt16LE(WAVE_FORMAT_PCM, 0);
  fmt.writeUInt16LE(nch, 2);
  fmt.writeUInt32LE(pcm.rate, 4);
  fmt.writeUInt32LE(pcm.rate * nch * 2, 8);
  fmt.writeUInt16LE(nch * 2, 12);
  fmt.writeUInt16LE(16, 14);
  const data = Buffer.alloc(frames * nch * 2);
  const view = new Int16Array(data.buffer, data.byteOffset, frames * nch);
  for (let c = 0; c < nch; c++) {
    const src = pcm.channels[c];
    for (let i = 0, j = c; i < frames; i++, j += nch) {
      const v = Math.round(src[i] * 32768); // the inverse of decoding (v / 32768): a decoded file re-encodes to the same samples
      view[j] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
    }
  }
  const chunks = [Buffer.from('WAVE', 'latin1'), chunk('fmt ', fmt)];
  if (comment !== undefined) {
    chunks.push(chunk('LIST', Buffer.concat([Buffer.from('INFO', 'latin1'), chunk('ICMT', Buffer.from(`${comment}\0`, 'utf8'))])));
  }
  chunks.push(chunk('data', data));
  return chunk('RIFF', Buffer.concat(chunks));
}

function chunk(id: string, body: Buffer): Buffer {
  const header = Buffer.alloc(8);
  header.write(id, 0, 4, 'latin1');
  header.writeUInt32LE(body.length, 4);
  // RIFF chunks are word aligned; the pad byte is not counted in the size.
  return Buffer.concat([header, body, Buffer.alloc(body.length % 2)]);
}
