import { setFlagsFromString } from 'node:v8';

/**
 * The `speakerhub` process is a long-running server that allocates little per request. V8's
 * defaults are sized for short, allocation-heavy programs:
 * - its young generation (semi-spaces growing up to 16 MiB), once grown, stays resident: about
 *   a quarter of an idle 100-speaker hub's RSS. A small semi-space that does not grow keeps the
 *   hub lean;
 * - its baseline compiler (Sparkplug) keeps machine code beside the bytecode of every function
 *   that ran a few times, start-up code included (1.5 MB of the idle hub). A server's hot paths
 *   are optimized by TurboFan either way, so the tier in between buys it nothing.
 * Neither costs measured request throughput (npm run bench: idle RSS and throughput, each against
 * bare node:http in the same run; its hubs run with these flags). Set before anything large is
 * allocated or compiled, so this module is the CLI's first import.
 * SPEAKERHUB_V8_DEFAULTS=1 keeps V8's defaults (to compare, or for a very busy hub).
 */
export const HEAP_FLAGS = ['--max-semi-space-size=1', '--semi-space-growth-factor=1', '--no-sparkplug'];

const isCliProcess = /[/\\]cli\.js$/.test(require.main?.filename ?? '');
if (isCliProcess && process.env.SPEAKERHUB_V8_DEFAULTS !== '1') {
  for (const flag of HEAP_FLAGS) setFlagsFromString(flag);
}
