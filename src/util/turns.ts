/**
 * One event-loop turn each: work a LAN peer makes the hub do (parsing the SOAP body a control
 * point sent) waits for its turn, and turns are handed out one per loop iteration. Thirty-two
 * bodies that arrive together then interleave with REST requests instead of running back to
 * back in one poll phase (a REST answer used to wait behind all of them). Bounded: when `max`
 * are already waiting, take() answers false at once and the caller refuses the request.
 */
export class Turns {
  private readonly waiting: (() => void)[] = [];
  private scheduled = false;

  constructor(private readonly max: number) {}

  /** Resolves true on this caller's turn; false at once when the queue is full. */
  take(): Promise<boolean> {
    if (this.waiting.length >= this.max) return Promise.resolve(false);
    return new Promise((resolve) => {
      this.waiting.push(() => resolve(true));
      this.schedule();
    });
  }

  get pending(): number {
    return this.waiting.length;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // A setImmediate queued from inside a setImmediate callback runs in the next iteration,
    // after that iteration's I/O: one turn per iteration.
    setImmediate(() => {
      this.scheduled = false;
      this.waiting.shift()?.();
      if (this.waiting.length) this.schedule();
    });
  }
}
