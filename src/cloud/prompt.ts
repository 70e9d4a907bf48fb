/**
 * Reads a password from the terminal without echoing it. Without a terminal (a pipe), the
 * first line of standard input is the password.
 */
export function askPassword(question: string): Promise<string> {
  const input = process.stdin;
  if (!input.isTTY) {
    return new Promise((resolve, reject) => {
      let buf = '';
      const onData = (d: Buffer) => {
        buf += d.toString('utf8');
        const nl = buf.indexOf('\n');
        if (nl >= 0) finish(buf.slice(0, nl).replace(/\r$/, ''));
      };
      const finish = (v: string) => {
        input.off('data', onData);
        input.off('end', onEnd);
        input.pause();
        resolve(v);
      };
      const onEnd = () => (buf ? finish(buf.replace(/\r?\n$/, '')) : reject(new Error('no password given on standard input')));
      input.on('data', onData);
      input.on('end', onEnd);
    });
  }
  process.stderr.write(question);
  return new Promise((resolve, reject) => {
    let value = '';
    input.setRawMode(true);
    input.resume();
    const onData = (d: Buffer) => {
      for (const ch of d.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return done();
        if (ch === '\u0003') return done(new Error('cancelled'));
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else value += ch;
      }
    };
    const done = (err?: Error) => {
      input.off('data', onData);
      input.setRawMode(false);
      input.pause();
      process.stderr.write('\n');
      if (err) reject(err);
      else resolve(value);
    };
    input.on('data', onData);
  });
}
