import { connect as netConnect } from 'node:net';
import mpd from 'mpd2';
import type { MPD } from 'mpd2';

/** Most an answer (a long queue's `playlist`) may buffer before the connection is dropped. */
export const MAX_RESPONSE_BYTES = 8 * 1024 * 1024;
/** A greeting longer than this is not MPD's. */
const MAX_GREETING_BYTES = 256;

export class MpdConnectionError extends Error {
  constructor(
    readonly code: 'MpdTimeout' | 'MpdGarbage' | 'MpdRefused' | 'MpdClosed' | 'MpdTooLarge',
    message: string,
  ) {
    super(message);
  }
}

/**
 * Reads the greeting on a connection of its own, bounded in size and time: mpd2's own
 * handshake leaves a socket open on garbage and waits forever on a peer that says nothing.
 * Resolves with the protocol version ('0.23.5').
 */
export function probeGreeting(host: string, port: number, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = netConnect({ host, port });
    let buf = '';
    const done = (err: Error | undefined, version?: string) => {
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(version!);
    };
    const timer = setTimeout(() => done(new MpdConnectionError('MpdTimeout', `no MPD greeting within ${timeoutMs} ms`)), timeoutMs);
    socket.setEncoding('latin1');
    socket.on('error', (e) => done(new MpdConnectionError('MpdRefused', e.message)));
    socket.on('close', () => done(new MpdConnectionError('MpdClosed', 'connection closed before the greeting')));
    socket.on('data', (chunk: string) => {
      buf += chunk;
      const nl = buf.indexOf('\n');
      if (nl < 0 && buf.length <= MAX_GREETING_BYTES) return;
      const line = (nl < 0 ? buf : buf.slice(0, nl)).slice(0, MAX_GREETING_BYTES);
      const m = /^OK MPD (\d+\.\d+(?:\.\d+)?)$/.exec(line.trim());
      if (m) done(undefined, m[1]);
      else done(new MpdConnectionError('MpdGarbage', `not an MPD greeting: ${JSON.stringify(line.slice(0, 60))}`));
    });
  });
}

/** A connected mpd2 client with time-bounded commands and a bounded answer buffer. */
export class MpdConnection {
  private constructor(
    private readonly client: MPD.Client,
    private readonly timeoutMs: number,
    /** Protocol version from the greeting ('0.23.5'). */
    readonly version: string,
  ) {}

  static async open(opts: { host: string; port: number; password?: string; timeoutMs: number }): Promise<MpdConnection> {
    const version = await probeGreeting(opts.host, opts.port, opts.timeoutMs);
    const client = await mpd.connect({ host: opts.host, port: opts.port, password: opts.password, timeout: opts.timeoutMs });
    const conn = new MpdConnection(client, opts.timeoutMs, version);
    // The socket timeout served the handshake; an idling connection is silent by design.
    client.socket.setTimeout(0);
    client.socket.on('data', () => {
      if (((client as unknown as { _buf?: string })._buf?.length ?? 0) > MAX_RESPONSE_BYTES) {
        client.socket.destroy(new MpdConnectionError('MpdTooLarge', `answer over ${MAX_RESPONSE_BYTES} bytes`));
      }
    });
    client.socket.on('error', () => undefined);
    return conn;
  }

  onSystem(fn: (subsystem: string) => void): void {
    this.client.on('system', fn);
  }
  onClose(fn: () => void): void {
    this.client.socket.once('close', fn);
  }

  /** Sends one command (already escaped) or a command list; rejects and drops the connection on timeout. */
  async send(command: string | string[]): Promise<string> {
    if (this.client.socket.destroyed) throw new MpdConnectionError('MpdClosed', 'not connected');
    const p = Array.isArray(command) ? this.client.sendCommands(command) : this.client.sendCommand(command);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.client.socket.destroy();
        reject(new MpdConnectionError('MpdTimeout', `no answer to '${String(command).split(' ')[0]}' within ${this.timeoutMs} ms`));
      }, this.timeoutMs);
    });
    try {
      return await Promise.race([p, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  close(): void {
    this.client.socket.destroy();
  }
}

/** Escapes one argument the way the MPD protocol quotes them. */
export function arg(value: string | number): string {
  return `"${String(value).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** `key: value` lines → an object (first value of each key). */
export function parseFields(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const i = line.indexOf(': ');
    if (i > 0) {
      const k = line.slice(0, i);
      if (!(k in out)) out[k] = line.slice(i + 2);
    }
  }
  return out;
}
