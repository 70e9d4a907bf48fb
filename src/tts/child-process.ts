import { spawn } from 'node:child_process';

export interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The child's stderr, trimmed and capped (it ends up in error messages). */
  stderr: string;
}

const MAX_STDERR = 4096;

/**
 * Runs a program without a shell, feeds `input` on stdin and waits for it to exit.
 * Rejects only when the program cannot be started or overruns `timeoutMs` (it is then killed);
 * a non-zero exit is the caller's to judge.
 */
export function runChild(command: string, args: string[], input: string, timeoutMs: number): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['pipe', 'ignore', 'pipe'], windowsHide: true });
    let stderr = '';
    let settled = false;
    const finish = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn();
    };
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      finish(() => reject(new Error(`${command} timed out after ${timeoutMs} ms`)));
    }, timeoutMs);

    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      if (stderr.length < MAX_STDERR) stderr += chunk;
    });
    child.on('error', (e) => finish(() => reject(e)));
    child.on('close', (code, signal) => finish(() => resolve({ code, signal, stderr: stderr.slice(0, MAX_STDERR).trim() })));
    // A child that dies before reading its input makes the write fail with EPIPE; its exit status says why.
    child.stdin.on('error', () => undefined);
    child.stdin.end(input, 'utf8');
  });
}
