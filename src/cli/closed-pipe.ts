/**
 * `speakerhub media | head -1`, `speakerhub status | true`: the reader closes the pipe before
 * the output is written. A C program gets SIGPIPE and ends without a word; Node ignores
 * SIGPIPE and emits EPIPE as an 'error' event on process.stdout, which, unhandled, crashed
 * the CLI with a 20-line trace and exit code 1 (issue 31, item 3). Nobody reads the output any
 * more, so a command's work is done: the process ends quietly with exit code 0.
 *
 * The hub (`speakerhub hub`) is a server whose stdout carries its banner and logs: a closed
 * stdout there is a failure a supervisor must see, so it ends with one line and exit code 1.
 */
let server = false;

export function endQuietlyOnClosedStdout(stream: NodeJS.WriteStream = process.stdout): void {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE' && !server) process.exit(0);
    // Any other write error (a full disk behind a redirect), or the hub's log stream gone: said on stderr.
    process.stderr.write(`speakerhub: cannot write to stdout: ${e.message}\n`);
    process.exit(1);
  });
}

/** Called by `speakerhub hub`: a closed stdout ends it with exit code 1 (see above). */
export function stdoutIsServerLog(): void {
  server = true;
}
