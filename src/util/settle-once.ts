/**
 * Something that must settle within a time limit: the first outcome wins (a value, success or
 * an error), later ones are ignored, and the deadline's timer is cleared either way. The media
 * decoders (ffmpeg's and the in-process WAV one), the UPnP HTTP client and the GENA publisher's
 * NOTIFY each had this dozen lines by hand; an exchange that both times out and then delivers
 * must settle once, or a replaced playback would be reported twice.
 */

/** What the deadline settles with: an error with that message or that error, or a value. */
export type Deadline<T> = { ms: number } & ({ message: () => string } | { error: () => Error } | { value: () => T });

interface SettleOnceCalls<T> {
  /** Settles with a value. Only the first outcome counts. */
  resolve(value: T): void;
  /**
   * Starts the time limit again from now with another deadline (a request that was written
   * now waits for its answer); nothing once settled.
   */
  restart(deadline: Deadline<T>): void;
  readonly settled: boolean;
}

/**
 * Callable with an error, or — when there is no value to give (SettleOnce<void>) — with none for
 * success; `resolve(value)` settles with a value. Only the first outcome counts.
 */
export type SettleOnce<T = void> = SettleOnceCalls<T> & (undefined extends T ? (error?: Error) => void : (error: Error) => void);

export function settleOnce<T = void>(
  resolve: (value: T) => void,
  reject: (error: Error) => void,
  deadline: Deadline<T>,
  /** Called before rejecting (the deadline's error or any other), e.g. to stop the work. */
  onError?: () => void,
): SettleOnce<T> {
  let done = false;
  const fail = (error: Error) => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    onError?.();
    reject(error);
  };
  const succeed = (value: T) => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    resolve(value);
  };
  const arm = (d: Deadline<T>) =>
    setTimeout(() => {
      if ('value' in d) succeed(d.value());
      else fail('error' in d ? d.error() : new Error(d.message()));
    }, d.ms);
  let timer = arm(deadline);
  // Without an error the call means success with no value: only SettleOnce<void> offers it.
  const settle = ((error?: Error) => (error ? fail(error) : succeed(undefined as T))) as SettleOnce<T>;
  Object.defineProperties(settle, {
    settled: { get: () => done },
    resolve: { value: succeed },
    restart: {
      value: (d: Deadline<T>) => {
        if (done) return;
        clearTimeout(timer);
        timer = arm(d);
      },
    },
  });
  return settle;
}
