import { spawn } from 'node:child_process';

export interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The child's stderr, trimmed and capped (it ends up in error messages). */
  stderr: string;
  /** What the child wrote to stdout, when asked for (ChildOptions.maxStdoutBytes). */
  stdout?: Buffer;
  /** ms from the start to the first stdout byte, when stdout was read and something came. */
  firstOutputMs?: number;
}

export interface ChildOptions {
  /** Read stdout, at most this many bytes: a child that writes more is killed (the call rejects). */
  maxStdoutBytes?: number;
  /** Aborting kills the child and rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** Why a child was stopped by us rather than exiting by itself. */
export class ChildStopped extends Error {
  constructor(
    message: string,
    readonly reason: 'timeout' | 'output' | 'aborted',
  ) {
    super(message);
    this.name = 'ChildStopped';
  }
}

const MAX_STDERR = 4096;

/**
 * Runs a program without a shell, feeds `input` on stdin and waits for it to exit.
 * Rejects only when the program cannot be started, overruns `timeoutMs` or the stdout cap, or
 * is aborted (it is then killed, SIGKILL); a non-zero exit is the caller's to judge.
 */
export function runChild(command: string, args: string[], input: string, timeoutMs: number, options: ChildOptions = {}): Promise<ChildResult> {
  const { maxStdoutBytes, signal } = options;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new ChildStopped(`${command} not started: aborted`, 'aborted'));
      return;
    }
    const started = performance.now();
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true });
    let stderr = '';
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let firstOutputMs: number | undefined;
    let settled = false;
    const finish = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      fn();
    };
    const stop = (message: string, reason: ChildStopped['reason']): void => {
      child.kill('SIGKILL');
      finish(() => reject(new ChildStopped(message, reason)));
    };
    const timer = setTimeout(() => stop(`${command} timed out after ${timeoutMs} ms`, 'timeout'), timeoutMs);
    const onAbort = (): void => stop(`${command} stopped: aborted`, 'aborted');
    signal?.addEventListener('abort', onAbort, { once: true });

    child.stdout.on('data', (chunk: Buffer) => {
      // Unasked-for output is read and dropped, so a chatty child never blocks on a full pipe.
      if (maxStdoutBytes === undefined) return;
      firstOutputMs ??= performance.now() - started;
      stdoutBytes += chunk.length;
      if (stdoutBytes > maxStdoutBytes) stop(`${command} wrote more than ${maxStdoutBytes} bytes`, 'output');
      else stdout.push(chunk);
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      if (stderr.length < MAX_STDERR) stderr += chunk;
    });
    child.on('error', (e) => finish(() => reject(e)));
    child.on('close', (code, exitSignal) =>
      finish(() =>
        resolve({
          code,
          signal: exitSignal,
          stderr: stderr.slice(0, MAX_STDERR).trim(),
          ...(maxStdoutBytes === undefined ? {} : { stdout: Buffer.concat(stdout), firstOutputMs }),
        }),
      ),
    );
    // A child that dies before reading its input makes the write fail with EPIPE; its exit status says why.
    child.stdin.on('error', () => undefined);
    child.stdin.end(input, 'utf8');
  });
}
