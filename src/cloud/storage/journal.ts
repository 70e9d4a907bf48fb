import { createHash } from 'node:crypto';
import { open, readFile, type FileHandle } from 'node:fs/promises';
import type { SqlValue } from './database';

/** One committed transaction: its sequence number and its writes, in order. */
export interface JournalEntry {
  seq: number;
  writes: [sql: string, params: SqlValue[]][];
}

/**
 * The embedded database's write-ahead journal: every committed transaction is appended as
 * one line (JSON plus a checksum) and fsync'ed before the commit is reported, so a process
 * killed at any instant loses nothing that was reported committed. A line torn by the
 * kill fails its checksum and is ignored (that transaction never reported success).
 */
export class Journal {
  private constructor(
    private readonly handle: FileHandle,
    private _bytes: number,
  ) {}

  static async open(file: string): Promise<Journal> {
    const handle = await open(file, 'a+', 0o600);
    const { size } = await handle.stat();
    return new Journal(handle, size);
  }

  /** Size of the journal on disk, to decide when to checkpoint. */
  get bytes(): number {
    return this._bytes;
  }

  async append(entry: JournalEntry): Promise<void> {
    const json = JSON.stringify(entry);
    const line = `${checksum(json)} ${json}\n`;
    try {
      await this.handle.write(line);
      await this.handle.datasync();
    } catch (e) {
      // A half-written line would hide every later entry from the replay: cut it off.
      await this.handle.truncate(this._bytes).catch(() => undefined);
      throw e;
    }
    this._bytes += Buffer.byteLength(line);
  }

  /** After a checkpoint: everything in the journal is in the snapshot. */
  async reset(): Promise<void> {
    await this.handle.truncate(0);
    await this.handle.datasync();
    this._bytes = 0;
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}

/** The intact entries of a journal file, in order; a torn or corrupt tail ends the read. */
export async function readJournal(file: string): Promise<JournalEntry[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return [];
  }
  const out: JournalEntry[] = [];
  for (const line of text.split('\n')) {
    const space = line.indexOf(' ');
    if (space < 0) break;
    const json = line.slice(space + 1);
    if (checksum(json) !== line.slice(0, space)) break;
    out.push(JSON.parse(json) as JournalEntry);
  }
  return out;
}

function checksum(s: string): string {
  return createHash('sha256').update(s).digest('base64url').slice(0, 16);
}
