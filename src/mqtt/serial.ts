/**
 * Runs jobs with the same key one after another, jobs with different keys side by side:
 * an announcement and the stop right after it (same speaker, same session) are carried out
 * in the order they were sent, while another session's status poll does not wait for a
 * slow TTS play. A job with nothing ahead of it that finishes synchronously runs without a
 * promise round trip. The number of waiting jobs is bounded by the link's admission limit.
 */
export class SerialQueues {
  private readonly tails = new Map<string, Promise<void>>();

  run(key: string, job: () => Promise<void> | void): Promise<void> | void {
    const tail = this.tails.get(key);
    if (!tail) {
      const r = job();
      if (r instanceof Promise) return this.track(key, r);
      return;
    }
    return this.track(
      key,
      tail.then(() => job()),
    );
  }

  private track(key: string, p: Promise<void>): Promise<void> {
    const settled = p.catch(() => undefined);
    this.tails.set(key, settled);
    void settled.then(() => {
      if (this.tails.get(key) === settled) this.tails.delete(key);
    });
    return p;
  }
}
