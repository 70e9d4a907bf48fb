import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';

/**
 * The `speakerhub` process is a long-running server that allocates little per request. V8's
 * defaults are sized for short, allocation-heavy programs:
 * - its young generation (semi-spaces growing up to 16 MiB), once grown, stays resident: about
 *   a quarter of an idle 100-speaker hub's RSS. A small semi-space that does not grow keeps the
 *   hub lean;
 * - its baseline compiler (Sparkplug) keeps machine code beside the bytecode of every function
 *   that ran a few times, start-up code included (1.5 MB of the idle hub). A server's hot paths
 *   are optimized by TurboFan either way, so the tier in between buys it nothing;
 * - it scavenges the young generation with helper threads. A 1 MiB young generation is
 *   scavenged in ~0.1 ms on the main thread alone; handing it out to helpers costs more CPU than
 *   it saves (measured under full REST load: scavenge pauses 0.13-0.15 -> 0.10 ms, and the hub's
 *   CPU per request against bare node:http 1.08-1.27x -> 0.96-1.09x over noisy runs).
 * The price is the small young generation's: under full load it is scavenged every ~120
 * requests, about 1 us of a ~20 us request; V8's defaults would cost ~14 MB of idle RSS instead
 * (npm run bench: idle RSS and throughput, each against bare node:http in the same run; its hubs
 * run with these flags). Set before anything large is allocated or compiled, so this module is
 * the CLI's first import.
 * SPEAKERHUB_V8_DEFAULTS=1 keeps V8's defaults (to compare, or for a very busy hub).
 */
export const HEAP_FLAGS = ['--max-semi-space-size=1', '--semi-space-growth-factor=1', '--no-sparkplug', '--no-parallel-scavenge'];

/**
 * Off while the hub starts, on again once it runs (startupDone): TurboFan, V8's optimizing
 * compiler. Start-up runs hundreds of module loads and then publishes every speaker once: code
 * that gets hot enough to be optimized and is not run that way again. Compiling it pages in the
 * compiler's ~3 MB of machine code and leaves its working memory in a thread's malloc arena:
 * 5.4 MB of an idle 100-speaker hub's RSS, for nothing (start-up is no slower without it:
 * 477-490 ms either way). The request paths are optimized as usual once they get hot, and that
 * working memory is spent then.
 */
export const START_FLAGS = ['--no-turbofan'];
const AFTER_START_FLAGS = ['--turbofan'];

const isCliProcess = /[/\\]cli\.js$/.test(require.main?.filename ?? '');
let startFlagsSet = false;
if (isCliProcess && process.env.SPEAKERHUB_V8_DEFAULTS !== '1') {
  for (const flag of HEAP_FLAGS) setFlagsFromString(flag);
  for (const flag of START_FLAGS) setFlagsFromString(flag);
  startFlagsSet = true;
}

/**
 * Start-up is over once the event loop was this idle for QUIET_WINDOWS windows in a row (the
 * first publications are out)... One quiet window was not enough: the publications come in
 * bursts, and a gap between two let TurboFan back on in time to optimize the next one (in
 * about one start in four it compiled one small function, which paged in the compiler and a
 * malloc arena: +3.5-4 MB of idle RSS, the high mode of `npm run bench` row 5).
 */
const QUIET_UTILIZATION = 0.1;
const QUIET_WINDOW_MS = 100;
const QUIET_WINDOWS = 5;
/** ...or this long after the hub started, busy or not: a hub under load from its first second gets optimized. */
const QUIET_WAIT_MAX_MS = 3000;

/**
 * The hub runs (or failed to start): the optimizing compiler is back on once the burst of work
 * that follows a start is over (the MQTT front end publishes every speaker's retained topics and
 * discovery configs: ~200 ms of a 100-speaker hub, hot enough to be optimized for nothing).
 * A no-op where the start flags were not set (an embedding process, SPEAKERHUB_V8_DEFAULTS=1);
 * a process started with the START_FLAGS on its command line (the bench's hubs) passes force.
 * Resolves once the compiler is on.
 */
export function startupDone(force = false): Promise<void> {
  if (!startFlagsSet && !force) return Promise.resolve();
  startFlagsSet = false;
  const began = performance.now();
  let last = performance.eventLoopUtilization();
  let quiet = 0;
  return new Promise((resolve) => {
    const timer = setInterval(() => {
      const now = performance.eventLoopUtilization();
      const busy = performance.eventLoopUtilization(now, last).utilization;
      last = now;
      quiet = busy < QUIET_UTILIZATION ? quiet + 1 : 0;
      if (quiet < QUIET_WINDOWS && performance.now() - began < QUIET_WAIT_MAX_MS) return;
      clearInterval(timer);
      for (const flag of AFTER_START_FLAGS) setFlagsFromString(flag);
      resolve();
    }, QUIET_WINDOW_MS);
    timer.unref();
  });
}
