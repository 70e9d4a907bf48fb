import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import type { Logger } from '../logger';

/** Most players remembered; the least recently set is dropped first beyond it. */
export const MAX_REMEMBERED_PLAYERS = 1024;

const SavedSchema = z.object({
  version: z.literal(1),
  volumes: z.record(z.string().max(64), z.number().int().min(0).max(100)),
});

/**
 * Volumes of players that forget theirs (squeezelite keeps none across a reconnect), by a key
 * that survives restarts (the player's MAC), in a small JSON file in the data folder: the hub
 * sends a player its own last volume when it connects, not a default. Bounded (least recently
 * set dropped), written atomically (a temporary file renamed over the old one), saves
 * coalesced into one pending timer; a file that cannot be read or parsed is a warning, and the
 * players start at the default as before.
 */
export class PlayerVolumes {
  private readonly volumes = new Map<string, number>();
  private timer?: NodeJS.Timeout;
  private writing: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    readonly path: string,
    private readonly logger: Logger,
    private readonly options: { delayMs?: number; max?: number } = {},
  ) {}

  async load(): Promise<void> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT')
        this.logger.warn(`cannot read ${this.path} (${(e as NodeJS.ErrnoException).code}); players start at the default volume`);
      return;
    }
    const parsed = SavedSchema.safeParse(safeJson(text));
    if (!parsed.success) {
      this.logger.warn(`${this.path} is not a volume file this hub wrote; players start at the default volume (it is rewritten at the next change)`);
      return;
    }
    for (const [key, volume] of Object.entries(parsed.data.volumes).slice(-this.max)) this.volumes.set(key, volume);
  }

  get(key: string): number | undefined {
    return this.volumes.get(key);
  }

  set(key: string, volume: number): void {
    if (this.closed || this.volumes.get(key) === volume) return;
    // Re-inserted at the end: the map's order is the least recently set first.
    this.volumes.delete(key);
    this.volumes.set(key, volume);
    while (this.volumes.size > this.max) this.volumes.delete(this.volumes.keys().next().value!);
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.save();
    }, this.options.delayMs ?? 500);
  }

  /** Writes what is pending and stops saving. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
      await this.save(true);
    }
    await this.writing;
  }

  private get max(): number {
    return this.options.max ?? MAX_REMEMBERED_PLAYERS;
  }

  private save(final = false): Promise<void> {
    const body = JSON.stringify({ version: 1, volumes: Object.fromEntries(this.volumes) });
    this.writing = this.writing.then(async () => {
      if (this.closed && !final) return;
      const tmp = `${this.path}.${process.pid}.tmp`;
      try {
        await mkdir(dirname(this.path), { recursive: true });
        await writeFile(tmp, body, { mode: 0o600 });
        await rename(tmp, this.path);
      } catch (e) {
        this.logger.warn(`cannot save player volumes to ${this.path}: ${(e as Error).message}`);
        await rm(tmp, { force: true }).catch(() => undefined);
      }
    });
    return this.writing;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
