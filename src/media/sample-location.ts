import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { ensureSampleMedia, sampleFileNames } from './samples';

/** Rendered by `npm run build` (scripts: build-samples), shipped with the package. */
export const PACKAGED_SAMPLES = join(__dirname, '..', '..', 'samples');

/**
 * Where the sample tracks are: the ones rendered at build time, or, where the package was
 * not built that way, rendered once into the data folder. Rendering costs ~0.3 s and leaves
 * memory behind, which is why it normally happens at build time, not at start.
 */
export async function sampleMediaDir(dataDir: string): Promise<string> {
  const packaged = await Promise.all(
    sampleFileNames().map((f) =>
      access(join(PACKAGED_SAMPLES, f)).then(
        () => true,
        () => false,
      ),
    ),
  );
  if (packaged.every(Boolean)) return PACKAGED_SAMPLES;
  const dir = join(dataDir, 'samples');
  await ensureSampleMedia(dir);
  return dir;
}
