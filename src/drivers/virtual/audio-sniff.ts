/**
 * Is this audio? A networked speaker refuses an HTML error page or a JSON answer served with
 * 200; a virtual speaker must too, or a play "succeeds" on anything. Known signatures count
 * first (servers often send audio as application/octet-stream); an audio/* (or Ogg) content
 * type is believed for formats without one here.
 */
export function looksLikeAudio(contentType: string, head: Buffer): boolean {
  if (hasAudioSignature(head)) return true;
  const type = contentType.split(';', 1)[0].trim().toLowerCase();
  return type.startsWith('audio/') || type === 'application/ogg' || type === 'video/mp4' || type === 'video/ogg';
}

function ascii(b: Buffer, at: number, text: string): boolean {
  return b.length >= at + text.length && b.toString('latin1', at, at + text.length) === text;
}

export function hasAudioSignature(b: Buffer): boolean {
  if (ascii(b, 0, 'ID3')) return true; // MP3 (or AAC) with an ID3v2 tag
  if (ascii(b, 0, 'RIFF') && ascii(b, 8, 'WAVE')) return true;
  if (ascii(b, 0, 'OggS') || ascii(b, 0, 'fLaC')) return true;
  if (ascii(b, 4, 'ftyp')) return true; // MP4/M4A
  if (ascii(b, 0, 'FORM') && (ascii(b, 8, 'AIFF') || ascii(b, 8, 'AIFC'))) return true;
  if (ascii(b, 0, '#!AMR') || ascii(b, 0, 'MAC ') || ascii(b, 0, 'wvpk')) return true;
  // MPEG audio frame sync (MP3, MP2) or ADTS AAC: 11 set bits, a valid layer/version.
  if (b.length >= 2 && b[0] === 0xff && (b[1] & 0xe0) === 0xe0 && (b[1] & 0x18) !== 0x08) return true;
  return false;
}
