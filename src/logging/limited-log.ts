import type { Logger } from '../logger';

/**
 * A warn line that cannot be turned into a log flood: at most `burst` lines per `windowMs`
 * for one kind of event; the rest are counted and reported in one summary line when the
 * window ends ("… and 2,997 more in 10 s"). A refusal costs a counter increment, not a line.
 */
export class LimitedLog {
  private windowStart = 0;
  private inWindow = 0;
  private suppressed = 0;
  private flushTimer?: NodeJS.Timeout;

  constructor(
    private readonly log: Logger,
    private readonly message: string,
    private readonly burst = 5,
    private readonly windowMs = 10_000,
  ) {}

  warn(fields: Record<string, unknown>): void {
    const now = Date.now();
    if (now - this.windowStart >= this.windowMs) {
      this.flush();
      this.windowStart = now;
      this.inWindow = 0;
    }
    if (this.inWindow < this.burst) {
      this.inWindow++;
      this.log.warn(fields, this.message);
      return;
    }
    this.suppressed++;
    if (!this.flushTimer) {
      this.flushTimer = setTimeout(() => this.flush(), this.windowStart + this.windowMs - now);
      this.flushTimer.unref();
    }
  }

  /** Writes the summary of what the window suppressed, if anything. */
  flush(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (!this.suppressed) return;
    this.log.warn({ suppressed: this.suppressed, windowMs: this.windowMs }, `${this.message} (${this.suppressed} more, not logged one by one)`);
    this.suppressed = 0;
  }
}
