/**
 * Per-speaker serialisation for the playback engine: a command runs once every earlier
 * command on any of its speakers has finished, so commands on disjoint speakers (two zones)
 * run side by side, and a slow start in one room never holds up another. The map holds one
 * tail per speaker with work queued, so it is bounded by the number of speakers.
 */
export class SpeakerLocks {
  private readonly tails = new Map<string, Promise<void>>();

  run<T>(ids: Iterable<string>, fn: () => Promise<T>): Promise<T> {
    const keys = [...new Set(ids)];
    const prior: Promise<void>[] = [];
    for (const k of keys) {
      const t = this.tails.get(k);
      if (t) prior.push(t);
    }
    const run = (prior.length ? Promise.all(prior) : Promise.resolve()).then(fn);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    for (const k of keys) this.tails.set(k, tail);
    void tail.then(() => {
      for (const k of keys) if (this.tails.get(k) === tail) this.tails.delete(k);
    });
    return run;
  }

  /** Speakers with work queued or running (so a hub-wide command can wait for all of it). */
  busy(): string[] {
    return [...this.tails.keys()];
  }
}
