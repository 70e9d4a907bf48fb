import { setFlagsFromString } from 'node:v8';

/**
 * The `speakerhub` process is a long-running server that allocates little per request. V8's
 * default young generation (semi-spaces growing up to 16 MiB) is sized for allocation-heavy
 * programs and, once grown, stays resident: about a quarter of an idle 100-speaker hub's RSS.
 * A small semi-space that does not grow keeps the hub lean at no measured cost in request
 * throughput (npm run bench: idle RSS and throughput, each against bare node:http in the same
 * run). Set before anything large is allocated, so this module is the CLI's first import.
 * SPEAKERHUB_V8_DEFAULTS=1 keeps V8's defaults (to compare, or for a very busy hub).
 */
export const HEAP_FLAGS = ['--max-semi-space-size=1', '--semi-space-growth-factor=1'];

const isCliProcess = /[/\\]cli\.js$/.test(require.main?.filename ?? '');
if (isCliProcess && process.env.SPEAKERHUB_V8_DEFAULTS !== '1') {
  for (const flag of HEAP_FLAGS) setFlagsFromString(flag);
}
