import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** Collects a child's JSON-lines stdout (and keeps its stderr tail for error messages). */
export class JsonLines<T extends { evt: string }> {
  readonly events: T[] = [];
  private readonly waiters = new Set<() => void>();
  stderr = '';

  constructor(readonly child: ChildProcess) {
    if (child.stdout) {
      createInterface({ input: child.stdout }).on('line', (line) => {
        try {
          this.events.push(JSON.parse(line) as T);
        } catch {
          return;
        }
        for (const w of this.waiters) w();
      });
    }
    child.stderr?.on('data', (d: Buffer) => {
      this.stderr = (this.stderr + d.toString()).slice(-4000);
    });
    child.once('exit', () => {
      for (const w of this.waiters) w();
    });
  }

  /** The first event (from index `from`) matching, waiting up to timeoutMs for it. */
  waitFor(match: (e: T) => boolean, timeoutMs: number, what: string, from = 0): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.events.slice(from).find(match);
        if (found) {
          done();
          resolve(found);
        } else if (this.child.exitCode !== null || this.child.signalCode !== null) {
          done();
          reject(new Error(`process exited (${this.child.exitCode ?? this.child.signalCode}) before ${what}: ${this.stderr.slice(-1500)}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; stderr: ${this.stderr.slice(-1500)}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
      check();
    });
  }
}

/** Resolves when the child has exited (at once if it already has). */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Sends a signal and waits for the exit; SIGKILL after graceMs if it lingers. */
export async function terminate(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM', graceMs = 3000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited(child);
  clearTimeout(timer);
}
