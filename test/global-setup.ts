/**
 * Jest's global setup: what several suites share is made here, once per run, in a folder of
 * this run (never a fixed name under the temp folder, which a new machine does not have and
 * which two runs would share). Suites find it through SPEAKERHUB_TEST_RUN_DIR (workers
 * inherit the environment); test/global-teardown.ts removes it.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureSampleMedia } from '../src/media/samples';

export default async function globalSetup(): Promise<void> {
  const runDir = await mkdtemp(join(tmpdir(), 'speakerhub-test-run-'));
  process.env.SPEAKERHUB_TEST_RUN_DIR = runDir;
  // The sample tracks every test hub serves (test/helpers/hub.ts SHARED_SAMPLES).
  await ensureSampleMedia(join(runDir, 'samples'));
}
