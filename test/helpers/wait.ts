/**
 * Waiting for a positive signal, the one way every suite and lab does it: poll a check until it
 * holds, fail after a timeout naming what was awaited. Never "sleep, then assert nothing happened".
 */

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Polls check() until it returns something truthy (returned), every stepMs; a throw counts as
 * "not yet" and its message joins the timeout error. `what` may be a function, asked at the
 * failure for the state worth printing.
 */
export async function eventually<T>(
  check: () => T | Promise<T>,
  timeoutMs = 5000,
  what: string | (() => string) = 'condition',
  stepMs = 20,
): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v as NonNullable<T>;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) {
      const name = typeof what === 'function' ? what() : what;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${name}${last ? ` (last error: ${(last as Error).message})` : ''}`);
    }
    await sleep(stepMs);
  }
}
