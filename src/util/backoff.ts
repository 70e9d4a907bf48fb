/**
 * Reconnect delays: exponential from `baseMs`, capped at `capMs`, with jitter (each delay
 * a random point in its upper half) so links cut off together (hubs after a cloud restart,
 * front ends after a hub restart) do not reconnect together.
 */
export function backoffDelay(attempt: number, baseMs: number, capMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/**
 * The one reconnect-with-backoff of every link that retries (cloud link, MQTT link, a remote
 * hub's event stream, drivers' control connections): next() gives the delay before the next
 * attempt and counts it; reset() after a connection that worked.
 */
export class Backoff {
  private attempt = 0;

  constructor(
    private readonly baseMs: number,
    private readonly capMs: number,
    private readonly random: () => number = Math.random,
  ) {}

  /** Attempts since the last reset(). */
  get attempts(): number {
    return this.attempt;
  }

  next(): number {
    return backoffDelay(this.attempt++, this.baseMs, this.capMs, this.random);
  }

  reset(): void {
    this.attempt = 0;
  }
}
