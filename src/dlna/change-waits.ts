/**
 * Waiting, bounded, for the hub's state to reach a renderer: the hub answers an operation
 * before its event arrives (events reach front ends asynchronously), and a renderer that must
 * not answer or show a state before that (Stop before STOPPED, a play before PLAYING) waits
 * here. changed() is called at each of the hub's changes.
 */
export class ChangeWaits {
  private waiters: (() => void)[] = [];

  /** The hub changed: every wait re-checks. */
  changed(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Resolves once cond holds, re-checked at each change, or after ms whatever it says. */
  async until(cond: () => boolean, ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (!cond()) {
      const left = deadline - Date.now();
      if (left <= 0) return;
      await this.next(left);
    }
  }

  private next(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

/** Waits for p, or ms at most (a rejection of p is the caller's to handle). */
export async function within(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([p, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
