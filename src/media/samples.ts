import { mkdir, rename, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { renderScore, type Score } from '../audio/synth';
import { encodeWav } from '../audio/wav';

export const SAMPLE_ARTIST = 'SpeakerHub';
export const SAMPLE_ALBUM = 'SpeakerHub Samples';
export const SAMPLE_RATE = 22050;

interface SampleTrack {
  file: string;
  title: string;
  score: Score;
}

/**
 * Three short original tunes, so a fresh install has something to play without downloading
 * anything (and nothing with a licence to worry about). Kept small: 22.05 kHz mono WAV is
 * about 1.3 MB for 30 s and every renderer plays it.
 */
const SAMPLE_TRACKS: readonly SampleTrack[] = [
  {
    file: 'sample-tone-1-morning-chime.wav',
    title: 'Sample Tone 1 — Morning Chime',
    score: {
      bpm: 96,
      parts: [
        {
          voice: 'bell',
          gain: 1,
          notes: `C5:1 E5:1 G5:1 A5:1 G5:2 E5:2  D5:1 E5:1 G5:1 E5:1 D5:2 C5:2
                  C5:1 E5:1 G5:1 C6:1 A5:2 G5:2  A5:1 G5:1 E5:1 D5:1 E5:1 D5:1 C5:2
                  C5:1 E5:1 G5:1 A5:1 G5:2 E5:2  G5:1 E5:1 D5:1 E5:1 C5:4`,
        },
        {
          voice: 'flute',
          gain: 0.4,
          notes: `C3:4 A2:4 G2:4 C3:4 C3:4 F2:4 A2:4 G2:2 C3:2 C3:4 A2:4 G2:4 C3:4`,
        },
      ],
    },
  },
  {
    file: 'sample-tone-2-little-waltz.wav',
    title: 'Sample Tone 2 — Little Waltz',
    score: {
      bpm: 112,
      parts: [
        {
          voice: 'flute',
          gain: 1,
          notes: `B4:2 D5:1 G5:3 F#5:1 E5:1 D5:1 B4:3  C5:2 E5:1 G5:2 E5:1 D5:1 C5:1 A4:1 D5:3
                  B4:2 D5:1 G5:2 B5:1 A5:1 G5:1 E5:1 D5:3  C5:1 E5:1 G5:1 F#5:2 A5:1 G5:1 D5:1 B4:1 G4:3`,
        },
        {
          voice: 'pluck',
          gain: 0.3,
          notes: `G2:1 D3:1 B3:1  G2:1 D3:1 B3:1  D2:1 A2:1 F#3:1 G2:1 D3:1 B3:1
                  C3:1 G3:1 E3:1  C3:1 G3:1 E3:1  D2:1 A2:1 F#3:1 D2:1 A2:1 F#3:1
                  G2:1 D3:1 B3:1  G2:1 D3:1 B3:1  A2:1 E3:1 C4:1  G2:1 D3:1 B3:1
                  C3:1 G3:1 E3:1  D2:1 A2:1 F#3:1 G2:1 D3:1 B3:1  G2:3`,
        },
      ],
    },
  },
  {
    file: 'sample-tone-3-evening-walk.wav',
    title: 'Sample Tone 3 — Evening Walk',
    score: {
      bpm: 100,
      parts: [
        {
          voice: 'pluck',
          gain: 1,
          notes: `A4:1 C5:1 E5:1 A5:1  G5:1.5 E5:0.5 D5:2  C5:1 D5:1 E5:1 G5:1  E5:4
                  F5:1 E5:1 D5:1 C5:1  D5:1.5 C5:0.5 B4:2  C5:1 E5:1 A5:1 G5:1  E5:4
                  A5:1 G5:1 F5:1 E5:1  D5:1 E5:1 F5:1 D5:1  E5:1 C5:1 B4:1 G#4:1  A4:4`,
        },
        {
          voice: 'pluck',
          gain: 0.5,
          notes: `A2:2 E3:2  G2:2 D3:2  C3:2 G2:2  A2:2 E3:2
                  F2:2 C3:2  G2:2 D3:2  A2:2 E3:2  C3:2 G2:2
                  F2:2 C3:2  D3:2 A2:2  E2:2 B2:2  A2:4`,
        },
      ],
    },
  },
];

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
}

/**
 * Writes the sample tracks into dir unless they are there already, and returns the paths
 * of all of them. A file the user edited or retagged is left alone. Each file is written
 * under a temporary name and renamed, so an interrupted run never leaves a truncated track
 * that a later run would take as present.
 */
/** File names of the sample tracks. */
export function sampleFileNames(): string[] {
  return SAMPLE_TRACKS.map((t) => t.file);
}

export async function ensureSampleMedia(dir: string): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const files: string[] = [];
  for (const track of SAMPLE_TRACKS) {
    const file = path.resolve(dir, track.file);
    if (!(await exists(file))) {
      const wav = encodeWav(renderScore(track.score, SAMPLE_RATE), SAMPLE_RATE, {
        title: track.title,
        artist: SAMPLE_ARTIST,
        album: SAMPLE_ALBUM,
      });
      const temp = `${file}.${process.pid}.tmp`;
      await writeFile(temp, wav);
      await rename(temp, file);
    }
    files.push(file);
  }
  return files;
}
