/**
 * Apple Lossless "escape" (uncompressed) frames: every RAOP receiver decodes ALAC, and a frame
 * that sets the escape flag carries plain 16-bit samples, so no codec is needed. Layout (bits):
 * element tag 3 (1 = channel pair), instance 4, unused 12, partial-frame 1, shift 2, escape 1,
 * then each frame's left and right samples big-endian, then the END tag (7) in 3 bits.
 */
export const FRAMES_PER_PACKET = 352;
/** Bytes of one escape frame of FRAMES_PER_PACKET stereo frames. */
export const ALAC_FRAME_BYTES = Math.ceil((3 + 4 + 12 + 1 + 2 + 1 + FRAMES_PER_PACKET * 32 + 3) / 8);

/** Encodes exactly FRAMES_PER_PACKET stereo s16le frames (pad shorter input with silence first). */
export function alacEscapeFrame(pcm: Buffer): Buffer {
  if (pcm.length !== FRAMES_PER_PACKET * 4) throw new RangeError(`expected ${FRAMES_PER_PACKET * 4} bytes of PCM`);
  const out = Buffer.alloc(ALAC_FRAME_BYTES);
  // Header: 001 0000 000000000000 0 00 1 = 23 bits; samples start at bit 23.
  out[0] = 0x20; // tag 1 (CPE) in the top 3 bits
  out[1] = 0x00;
  out[2] = 0x02; // ...partial 0, shift 00, escape 1 at bit 22 (byte 2, bit 1 from the right)
  // Every 16-bit big-endian sample lands at an odd bit offset (23 + 16k): shift by 7.
  let bit = 23;
  for (let i = 0; i < pcm.length; i += 2) {
    const v = pcm.readUInt16LE(i); // the sample's two's complement bits
    writeBits(out, bit, v, 16);
    bit += 16;
  }
  writeBits(out, bit, 7, 3);
  return out;
}

function writeBits(buf: Buffer, bit: number, value: number, count: number): void {
  for (let i = count - 1; i >= 0; i--) {
    if ((value >> i) & 1) buf[bit >> 3] |= 0x80 >> (bit & 7);
    bit++;
  }
}
