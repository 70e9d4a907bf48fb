/** At most `size` tasks at once; the others wait their turn, first come first served. */
export class SlotQueue {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly size: number;

  constructor(size: number) {
    this.size = Math.max(1, size);
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    while (this.active >= this.size) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.active++;
    try {
      return await fn();
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }
}
