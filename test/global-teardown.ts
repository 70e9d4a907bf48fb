import { rm } from 'node:fs/promises';

/** Removes the run's shared fixtures (test/global-setup.ts). */
export default async function globalTeardown(): Promise<void> {
  const runDir = process.env.SPEAKERHUB_TEST_RUN_DIR;
  if (runDir && /speakerhub-test-run-/.test(runDir)) await rm(runDir, { recursive: true, force: true });
}
