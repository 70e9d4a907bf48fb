/**
 * Reconnect delays: exponential from `baseMs`, capped at `capMs`, with jitter (each delay
 * a random point in its upper half) so hubs cut off together do not reconnect together.
 */
export function backoffDelay(attempt: number, baseMs: number, capMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}
