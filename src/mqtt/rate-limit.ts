import type { Logger } from '../logger';

/**
 * Logs a kind of fault at most once per interval, with how many were suppressed since:
 * a misbehaving client publishing garbage in a loop must not flood the log.
 */
export class RateLimitedLog {
  private last = new Map<string, { at: number; suppressed: number }>();

  constructor(
    private readonly logger: Logger,
    private readonly intervalMs = 5000,
  ) {}

  warn(kind: string, fields: Record<string, unknown>, msg: string): void {
    const now = Date.now();
    const seen = this.last.get(kind);
    if (seen && now - seen.at < this.intervalMs) {
      seen.suppressed++;
      return;
    }
    if (this.last.size > 100) this.last.clear();
    this.last.set(kind, { at: now, suppressed: 0 });
    this.logger.warn({ ...fields, ...(seen?.suppressed ? { suppressed: seen.suppressed } : {}) }, msg);
  }
}
