import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

/**
 * The file a program name runs as (the first executable on PATH), or undefined. Asked before
 * spawning a helper the hub cannot work without, so that its absence is one clear message
 * naming the fix instead of a `spawn … ENOENT` on every play.
 */
export function findProgram(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const candidates = isAbsolute(name)
    ? [name]
    : (env.PATH ?? '')
        .split(delimiter)
        .filter(Boolean)
        .map((dir) => join(dir, name));
  for (const file of candidates) {
    try {
      accessSync(file, constants.X_OK);
      if (statSync(file).isFile()) return file;
    } catch {
      // not there, or not executable: the next one
    }
  }
  return undefined;
}

/** The drivers that decode media with ffmpeg (Squeezebox, Snapcast, AirPlay): the hub's other parts use it too (announcement clips). */
export const FFMPEG_DRIVERS = ['squeezebox', 'snapcast', 'airplay'] as const;

/** What to tell the user when ffmpeg is missing (Debian: the ffmpeg package; squeezelite does not bring it). */
export const FFMPEG_MISSING = 'ffmpeg is not installed (not found on PATH): install it (sudo apt install ffmpeg) and play again';

/** A play that needs ffmpeg on a hub without it: its message names the fix. */
export class FfmpegMissingError extends Error {
  readonly code = 'FfmpegMissing';
  constructor() {
    super(FFMPEG_MISSING);
  }
}
