import { open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';

/**
 * DRM detection. A speaker cannot decrypt protected audio, so serving it only produces
 * silence or a renderer error; the library refuses such files up front instead.
 *
 * Three signals, because none covers every case on its own:
 *  - the .m4p extension (iTunes FairPlay downloads), refused whatever their content;
 *  - the MP4 sample entries in moov/trak/mdia/minf/stbl/stsd, read from the raw file: an
 *    encrypted entry type (drms, enca, …) or a protection scheme box ('sinf') inside an
 *    otherwise plain entry. music-metadata reports an unknown entry type as codecName
 *    "<drms>", but says nothing about a 'sinf' box, so the raw check is needed;
 *  - the ASF (WMA) header's content-encryption objects.
 * `protectedCodec` re-checks music-metadata's view after parsing, for the rare MP4 whose
 * moov the raw walk skipped (too large or malformed).
 */

/** Sample-entry types whose samples are encrypted (ISO/IEC 23001-7, Apple, Audible). */
const PROTECTED_SAMPLE_ENTRIES: Readonly<Record<string, string>> = {
  drms: 'Apple FairPlay',
  drmi: 'Apple FairPlay',
  enca: 'Common Encryption',
  encv: 'Common Encryption',
  enct: 'Common Encryption',
  encs: 'Common Encryption',
  aavd: 'Audible',
};

/** Box types that may open an ISO base media file; anything else is not MP4. */
const ISO_BMFF_FIRST_BOXES = new Set(['ftyp', 'moov', 'mdat', 'free', 'skip', 'wide', 'pdin', 'styp']);

/** A moov is metadata only; a larger one is malformed, and music-metadata refuses it too. */
const MAX_MOOV_BYTES = 64 * 1024 * 1024;
const MAX_ASF_HEADER_BYTES = 16 * 1024 * 1024;

const ASF_HEADER_OBJECT = guidBytes('75B22630-668E-11CF-A6D9-00AA0062CE6C');
const ASF_ENCRYPTION_OBJECTS = [
  guidBytes('2211B3FB-BD23-11D2-B4B7-00A0C955FC6E'), // Content Encryption (WMDRM 7)
  guidBytes('298AE614-2622-4C17-B935-DAE07EE9289C'), // Extended Content Encryption (WMDRM 10)
  guidBytes('43058533-6981-49E6-9B74-AD12CB86D58C'), // Advanced Content Encryption (PlayReady)
];

/**
 * Returns why the file is DRM-protected, or undefined when nothing says it is.
 * Throws only when the file cannot be read.
 */
export async function findDrmProtection(file: string): Promise<string | undefined> {
  if (path.extname(file).toLowerCase() === '.m4p') {
    return 'the .m4p extension marks iTunes FairPlay-protected audio';
  }
  const fh = await open(file, 'r');
  try {
    const { size } = await fh.stat();
    const head = await readAt(fh, 0, 16);
    if (head.length >= 8 && ISO_BMFF_FIRST_BOXES.has(head.toString('latin1', 4, 8))) {
      return await mp4Protection(fh, size);
    }
    if (head.length === 16 && head.equals(ASF_HEADER_OBJECT)) {
      return await asfProtection(fh, size);
    }
    return undefined;
  } finally {
    await fh.close();
  }
}

/** The same verdict from music-metadata's parse result: an encrypted MP4 sample entry. */
export function protectedCodec(codecNames: readonly string[]): string | undefined {
  for (const codecName of codecNames) {
    const entry = /^<(.{4})>$/.exec(codecName)?.[1];
    if (entry && entry in PROTECTED_SAMPLE_ENTRIES) return sampleEntryReason(entry);
  }
  return undefined;
}

function sampleEntryReason(entry: string): string {
  return `MP4 sample entry '${entry}' (${PROTECTED_SAMPLE_ENTRIES[entry]})`;
}

async function mp4Protection(fh: FileHandle, size: number): Promise<string | undefined> {
  const moov = await findTopLevelBox(fh, size, 'moov');
  if (!moov || moov.length > MAX_MOOV_BYTES) return undefined;
  const buf = await readAt(fh, moov.start, moov.length);
  for (const trak of boxes(buf, 0, buf.length, 'trak')) {
    for (const mdia of boxes(buf, trak.start, trak.end, 'mdia')) {
      for (const minf of boxes(buf, mdia.start, mdia.end, 'minf')) {
        for (const stbl of boxes(buf, minf.start, minf.end, 'stbl')) {
          for (const stsd of boxes(buf, stbl.start, stbl.end, 'stsd')) {
            // stsd is a full box: version/flags and an entry count precede the entries.
            for (const entry of boxes(buf, stsd.start + 8, stsd.end)) {
              if (entry.type in PROTECTED_SAMPLE_ENTRIES) return sampleEntryReason(entry.type);
              if (containsBox(buf, entry.start, entry.end, 'sinf')) {
                return `protection scheme box 'sinf' in MP4 sample entry '${entry.type}'`;
              }
            }
          }
        }
      }
    }
  }
  return undefined;
}

interface Box {
  type: string;
  /** Payload bounds, header excluded. */
  start: number;
  end: number;
}

/** Child boxes of buf[start, end), optionally only those of one type; stops at a malformed box. */
function* boxes(buf: Buffer, start: number, end: number, type?: string): Generator<Box> {
  let pos = start;
  while (pos + 8 <= end) {
    let size = buf.readUInt32BE(pos);
    const boxType = buf.toString('latin1', pos + 4, pos + 8);
    let header = 8;
    if (size === 1) {
      if (pos + 16 > end) return;
      size = Number(buf.readBigUInt64BE(pos + 8));
      header = 16;
    } else if (size === 0) {
      size = end - pos;
    }
    if (size < header || pos + size > end) return;
    if (type === undefined || boxType === type) yield { type: boxType, start: pos + header, end: pos + size };
    pos += size;
  }
}

/**
 * Whether a box of that type lies anywhere in buf[start, end). Searched rather than walked:
 * where a sample entry's child boxes begin depends on its kind and version (ISO audio,
 * QuickTime v1/v2 audio, video), and a fourcc plus a size that fits is unambiguous enough
 * inside the few bytes of a sample entry.
 */
function containsBox(buf: Buffer, start: number, end: number, type: string): boolean {
  for (let i = buf.indexOf(type, start + 4, 'latin1'); i !== -1 && i + 4 <= end; i = buf.indexOf(type, i + 1, 'latin1')) {
    const size = buf.readUInt32BE(i - 4);
    if (size >= 8 && i - 4 + size <= end) return true;
  }
  return false;
}

async function findTopLevelBox(fh: FileHandle, fileSize: number, type: string): Promise<{ start: number; length: number } | undefined> {
  let pos = 0;
  while (pos + 8 <= fileSize) {
    const head = await readAt(fh, pos, 16);
    if (head.length < 8) return undefined;
    let size = head.readUInt32BE(0);
    let header = 8;
    if (size === 1) {
      if (head.length < 16) return undefined;
      size = Number(head.readBigUInt64BE(8));
      header = 16;
    } else if (size === 0) {
      size = fileSize - pos;
    }
    if (size < header) return undefined;
    if (head.toString('latin1', 4, 8) === type) return { start: pos + header, length: Math.min(size, fileSize - pos) - header };
    pos += size;
  }
  return undefined;
}

async function asfProtection(fh: FileHandle, fileSize: number): Promise<string | undefined> {
  const head = await readAt(fh, 16, 8);
  if (head.length < 8) return undefined;
  const headerSize = Math.min(Number(head.readBigUInt64LE(0)), fileSize, MAX_ASF_HEADER_BYTES);
  const header = await readAt(fh, 0, headerSize);
  // The encryption objects sit directly in the header or in its extension object; a GUID
  // match anywhere in the header is unambiguous.
  return ASF_ENCRYPTION_OBJECTS.some((guid) => header.includes(guid)) ? 'ASF content encryption object (Windows Media DRM)' : undefined;
}

async function readAt(fh: FileHandle, position: number, length: number): Promise<Buffer> {
  const buf = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await fh.read(buf, done, length - done, position + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  return buf.subarray(0, done);
}

/** A GUID in the mixed-endian byte order ASF stores it in. */
function guidBytes(guid: string): Buffer {
  const hex = guid.replace(/-/g, '');
  const b = Buffer.from(hex, 'hex');
  return Buffer.concat([
    Buffer.from(b.subarray(0, 4)).reverse(),
    Buffer.from(b.subarray(4, 6)).reverse(),
    Buffer.from(b.subarray(6, 8)).reverse(),
    b.subarray(8),
  ]);
}
