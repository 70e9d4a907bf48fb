import { mkdir, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { encodeWav } from './wav';

const RATE = 22050;

/**
 * The announcement chime: two bell-like tones (E6, C6), 0.9 s, rendered once into a file so
 * that an announcement with Chime=true costs no synthesis. Same sample rate as espeak-ng.
 */
export function renderChime(): Buffer {
  const notes = [
    { f: 1318.5, at: 0, len: 0.45 },
    { f: 1046.5, at: 0.3, len: 0.6 },
  ];
  const total = Math.round(RATE * 0.9);
  const out = new Float64Array(total);
  for (const n of notes) {
    const start = Math.round(n.at * RATE);
    const len = Math.min(Math.round(n.len * RATE), total - start);
    for (let i = 0; i < len; i++) {
      const t = i / RATE;
      const env = Math.min(1, t / 0.005) * Math.exp(-t / 0.18);
      out[start + i] += env * (Math.sin(2 * Math.PI * n.f * t) + 0.3 * Math.sin(4 * Math.PI * n.f * t));
    }
  }
  const samples = new Int16Array(total);
  for (let i = 0; i < total; i++) samples[i] = Math.round(Math.max(-1, Math.min(1, out[i] * 0.45)) * 32767);
  return encodeWav(samples, RATE, { title: 'Chime', artist: 'SpeakerHub', album: '' });
}

/** Writes the chime to `file` unless it is there; returns the file. */
export async function ensureChime(file: string): Promise<string> {
  const info = await stat(file).catch(() => undefined);
  if (info?.isFile() && info.size > 0) return file;
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, renderChime());
  return file;
}
