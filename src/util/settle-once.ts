/**
 * A start that must succeed within a time limit: the first call of `settle` wins (success or
 * error), later ones are ignored, and the deadline's timer is cleared either way. The media
 * decoders (ffmpeg's and the in-process WAV one) each had this dozen lines; a start that both
 * times out and then delivers must resolve once, or a replaced playback would be reported twice.
 */
export interface SettleOnce {
  /** Settles with an error, or with success when called without one. Only the first call counts. */
  (error?: Error): void;
  readonly settled: boolean;
}

export function settleOnce(
  resolve: () => void,
  reject: (error: Error) => void,
  deadline: { ms: number; message: () => string },
  onError?: () => void,
): SettleOnce {
  let done = false;
  const timer = setTimeout(() => settle(new Error(deadline.message())), deadline.ms);
  const settle = ((error?: Error) => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    if (error) {
      onError?.();
      reject(error);
    } else resolve();
  }) as SettleOnce;
  Object.defineProperty(settle, 'settled', { get: () => done });
  return settle;
}
