import { connect as netConnect, type Socket } from 'node:net';
import { MpdConnectionError, parseAck, type MpdAckError } from './errors';
import { MpdLineReader } from './reader';
import { arg } from './text';

/**
 * The bounds a peer is held to. Every number a peer sends (a `binary:` length) is checked
 * against them before it is used, and crossing one fails the peer: the connection is dropped.
 */
export interface MpdLimits {
  /** Longest text line (MPD's own lines are short; a long tag or path is a few KiB). */
  maxLineBytes: number;
  /** Most one answer may hold, text and binary together (a long queue's `playlistinfo`). */
  maxResponseBytes: number;
  /** Longest `binary:` chunk (albumart / readpicture; MPD sends binarylimit, 8 KiB by default). */
  maxBinaryBytes: number;
  /** Commands waiting behind the one in flight; one more is refused with MpdBusy. */
  maxQueued: number;
  /** A greeting longer than this is not MPD's. */
  maxGreetingBytes: number;
}

export const DEFAULT_MPD_LIMITS: MpdLimits = {
  maxLineBytes: 64 * 1024,
  maxResponseBytes: 8 * 1024 * 1024,
  maxBinaryBytes: 1024 * 1024,
  maxQueued: 64,
  maxGreetingBytes: 256,
};

export interface MpdResponse {
  /** The answer's text lines, each with its '\n' ('' for a bare OK). */
  text: string;
  /** The `binary:` chunks of the answer, in order. */
  binary: Buffer[];
}

export interface MpdClientOptions {
  host: string;
  port: number;
  /** Sent with `password` after the greeting; never logged. */
  password?: string;
  /** Connection + greeting (+ password), and each command's answer, must come within this (ms). */
  timeoutMs: number;
  limits?: Partial<MpdLimits>;
}

/**
 * Changes MPD may report per second by itself. Each costs the driver a `status`; a real MPD
 * reports a few (a volume slider dragged: tens), a peer that reports changes in a loop is faulty.
 */
const MAX_IDLE_WAKEUPS_PER_S = 200;

interface Waiter {
  kind: 'idle' | 'command';
  /** The command's first word, for messages (never its arguments: they may be secrets). */
  name: string;
  text?: string;
  /** An idle the hub ended with `noidle` (so a bare OK is its due answer). */
  cancelled?: boolean;
  resolve(r: MpdResponse): void;
  reject(e: Error): void;
  timer?: NodeJS.Timeout;
}

/**
 * A small MPD client (protocol: https://mpd.readthedocs.io/en/latest/protocol.html) that
 * holds the server to explicit bounds. One command is in flight at a time, the others wait in
 * a bounded queue; between commands the connection idles (`idle`), and MPD's `changed:` lines
 * become onSystem calls. A command interrupts the idle with `noidle` (MPD then answers the idle
 * first, with or without events, and ignores a `noidle` that crossed an idle answer), so every
 * answer has exactly one waiter: an answer nobody waits for is a protocol fault.
 *
 * Any fault of the peer (garbage, a bound crossed, an unexpected OK, a timeout, the socket
 * closing) closes the connection once, rejects everything waiting with a typed
 * MpdConnectionError and calls the onClose listeners with it. Nothing throws out of a socket
 * handler.
 */
export class MpdClient {
  /** Protocol version from the greeting ('0.23.5'). */
  version = '';
  private readonly limits: MpdLimits;
  private readonly socket: Socket;
  private readonly reader: MpdLineReader;
  private phase: 'greeting' | 'ready' | 'closed' = 'greeting';
  private readonly inflight: Waiter[] = [];
  private readonly queue: Waiter[] = [];
  private idling = false;
  private lines: string[] = [];
  private binary: Buffer[] = [];
  private responseBytes = 0;
  private closeError?: MpdConnectionError;
  private readonly closeListeners: ((err: MpdConnectionError) => void)[] = [];
  private readonly systemListeners: ((subsystem: string) => void)[] = [];
  private wakeWindow = 0;
  private wakeups = 0;
  private opened?: { resolve(): void; reject(e: Error): void; timer: NodeJS.Timeout };

  private constructor(private readonly opts: MpdClientOptions) {
    this.limits = { ...DEFAULT_MPD_LIMITS, ...opts.limits };
    this.reader = new MpdLineReader(
      {
        line: (line, bytes) => this.onLine(line, bytes),
        binary: (chunk) => this.binary.push(chunk),
        error: (err) => this.fail(this.phase === 'greeting' ? greetingError(err, this.limits.maxGreetingBytes) : err),
      },
      this.limits.maxGreetingBytes,
    );
    this.socket = netConnect({ host: opts.host, port: opts.port });
  }

  /** The two ends' addresses (the hub's own is the one on the route to the MPD: media URLs may need it). */
  get addresses(): { local?: string; remote?: string } {
    return { local: this.socket.localAddress, remote: this.socket.remoteAddress };
  }

  /** Connects, reads the greeting, sends the password; rejects with a typed error on any fault. */
  static async connect(opts: MpdClientOptions): Promise<MpdClient> {
    const client = new MpdClient(opts);
    await client.open();
    return client;
  }

  private open(): Promise<void> {
    const s = this.socket;
    const opened = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => this.fail(new MpdConnectionError('MpdTimeout', `no MPD greeting within ${this.opts.timeoutMs} ms`)),
        this.opts.timeoutMs,
      );
      this.opened = { resolve, reject, timer };
    });
    s.setNoDelay(true);
    // Finds a peer that vanished without a FIN while the connection idles (idle has no timeout).
    s.setKeepAlive(true, 30_000);
    s.on('data', (d: Buffer) => {
      try {
        this.reader.push(d);
      } catch (e) {
        // Only a bug of ours can land here; it still must not take the hub down.
        this.fail(new MpdConnectionError('MpdProtocol', `cannot handle the answer: ${(e as Error).message}`));
      }
    });
    s.on('error', (e) => {
      const code = this.phase === 'greeting' ? 'MpdRefused' : 'MpdClosed';
      this.fail(new MpdConnectionError(code, e.message));
    });
    s.on('close', () =>
      this.fail(new MpdConnectionError('MpdClosed', this.phase === 'greeting' ? 'connection closed before the greeting' : 'connection closed')),
    );
    return opened;
  }

  onSystem(fn: (subsystem: string) => void): void {
    this.systemListeners.push(fn);
  }

  /** Called once when the connection is gone, with why (at once if it is gone already). */
  onClose(fn: (err: MpdConnectionError) => void): void {
    if (this.closeError) {
      const err = this.closeError;
      queueMicrotask(() => fn(err));
    } else this.closeListeners.push(fn);
  }

  get closed(): boolean {
    return this.phase === 'closed';
  }

  /** Why the connection closed, once it has. */
  get error(): MpdConnectionError | undefined {
    return this.closeError;
  }

  /**
   * Runs one command (already escaped, see arg()) or a command list; resolves with the answer,
   * rejects with MpdAckError when the server refuses it (the connection stays), or with the
   * connection's fault.
   */
  command(command: string | string[]): Promise<MpdResponse> {
    const text = Array.isArray(command) ? ['command_list_begin', ...command, 'command_list_end'].join('\n') : command;
    const name = (Array.isArray(command) ? 'command_list' : command.split(' ')[0]).slice(0, 40);
    if (this.closeError) return Promise.reject(this.closeError);
    // A newline would end the command early and smuggle in another one.
    if ((Array.isArray(command) ? command : [command]).some((c) => /[\r\n\0]/.test(c))) {
      return Promise.reject(new MpdConnectionError('MpdProtocol', `'${name}': a command may not contain a line break`));
    }
    if (this.queue.length >= this.limits.maxQueued) {
      return Promise.reject(new MpdConnectionError('MpdBusy', `${this.queue.length} commands already wait for this MPD`));
    }
    return new Promise<MpdResponse>((resolve, reject) => {
      const w: Waiter = { kind: 'command', name, text, resolve, reject };
      // From the call on, so time spent queued counts: a peer that answers slowly is a slow peer.
      w.timer = setTimeout(
        () => this.fail(new MpdConnectionError('MpdTimeout', `no answer to '${name}' within ${this.opts.timeoutMs} ms`)),
        this.opts.timeoutMs,
      );
      this.queue.push(w);
      this.pump();
    });
  }

  /** command(), answer as text (what the driver parses). */
  async send(command: string | string[]): Promise<string> {
    return (await this.command(command)).text;
  }

  close(): void {
    this.fail(new MpdConnectionError('MpdClosed', 'closed by the hub'));
  }

  /** Sends the next command if none is in flight; idles when there is none. */
  private pump(): void {
    if (this.phase !== 'ready') return;
    if (this.inflight.some((w) => w.kind === 'command')) return;
    const next = this.queue.shift();
    if (!next) {
      if (this.idling) return;
      this.idling = true;
      this.inflight.push({ kind: 'idle', name: 'idle', resolve: (r) => this.emitChanges(r.text), reject: () => undefined });
      this.socket.write('idle\n');
      return;
    }
    let out = '';
    if (this.idling) {
      // The idle's waiter stays first in line: its answer (events or a bare OK) comes first.
      this.idling = false;
      const idle = this.inflight.find((w) => w.kind === 'idle');
      if (idle) idle.cancelled = true;
      out = 'noidle\n';
    }
    this.inflight.push(next);
    this.socket.write(`${out}${next.text}\n`);
  }

  private onLine(line: string, bytes: number): void {
    if (this.phase === 'greeting') return this.onGreeting(line);
    if (!this.inflight.length) {
      return this.fail(new MpdConnectionError('MpdProtocol', `an answer nobody asked for: ${JSON.stringify(line.slice(0, 40))}`));
    }
    this.responseBytes += bytes + 1;
    if (this.responseBytes > this.limits.maxResponseBytes) {
      return this.fail(new MpdConnectionError('MpdTooLarge', `answer over ${this.limits.maxResponseBytes} bytes`));
    }
    if (line === 'OK') return this.complete(undefined);
    const ack = parseAck(line);
    if (ack) return this.complete(ack);
    if (line.startsWith('binary:')) {
      const m = /^binary: (\d{1,10})$/.exec(line);
      const n = m ? Number(m[1]) : NaN;
      if (!(n <= this.limits.maxBinaryBytes)) {
        return this.fail(new MpdConnectionError('MpdProtocol', `bad binary length ${JSON.stringify(line.slice(8, 30))}`));
      }
      if (this.responseBytes + n > this.limits.maxResponseBytes) {
        return this.fail(new MpdConnectionError('MpdTooLarge', `answer over ${this.limits.maxResponseBytes} bytes`));
      }
      this.responseBytes += n + 1;
      this.reader.expectBinary(n);
    }
    this.lines.push(line);
  }

  private onGreeting(line: string): void {
    const m = /^OK MPD (\d{1,4}\.\d{1,4}(?:\.\d{1,4})?)$/.exec(line.trim());
    if (!m) return this.fail(new MpdConnectionError('MpdGarbage', `not an MPD greeting: ${JSON.stringify(line.slice(0, 60))}`));
    this.version = m[1];
    this.phase = 'ready';
    this.reader.maxLineBytes = this.limits.maxLineBytes;
    if (!this.opts.password) return this.finishOpen();
    this.command(`password ${arg(this.opts.password)}`).then(
      () => this.finishOpen(),
      (e: Error) => {
        const ack = (e as MpdAckError).code === 'MpdAck';
        this.fail(ack ? new MpdConnectionError('MpdRefused', `password refused: ${e.message}`) : (e as MpdConnectionError));
      },
    );
  }

  private finishOpen(): void {
    const o = this.opened;
    if (!o || this.phase !== 'ready') return;
    this.opened = undefined;
    clearTimeout(o.timer);
    o.resolve();
    this.pump();
  }

  private complete(ack: MpdAckError | undefined): void {
    const w = this.inflight.shift()!;
    clearTimeout(w.timer);
    const lines = this.lines;
    const response: MpdResponse = { text: lines.length ? `${lines.join('\n')}\n` : '', binary: this.binary };
    this.lines = [];
    this.binary = [];
    this.responseBytes = 0;
    if (w.kind === 'idle') {
      this.idling = false;
      // An idle MPD refuses only when we may not listen (no password given where one is needed).
      if (ack) return this.fail(new MpdConnectionError('MpdRefused', `idle refused: ${ack.line}`));
      // MPD ends an idle by itself only to report a change: a bare OK we did not ask for with
      // noidle is an extra answer (and answering each idle at once would make us spin).
      if (!w.cancelled && !/^changed: /m.test(response.text)) {
        return this.fail(new MpdConnectionError('MpdProtocol', 'an answer nobody asked for (an idle ended without a change)'));
      }
      if (!w.cancelled && this.idleFlood()) {
        return this.fail(new MpdConnectionError('MpdProtocol', `more than ${MAX_IDLE_WAKEUPS_PER_S} idle wake-ups in a second`));
      }
    }
    if (ack) w.reject(ack);
    else w.resolve(response);
    this.pump();
  }

  /** Counts the idle answers MPD sent by itself in the current second; true over the bound. */
  private idleFlood(): boolean {
    const now = Date.now();
    if (now - this.wakeWindow >= 1000) {
      this.wakeWindow = now;
      this.wakeups = 0;
    }
    return ++this.wakeups > MAX_IDLE_WAKEUPS_PER_S;
  }

  private emitChanges(text: string): void {
    const seen = new Set<string>();
    for (const line of text.split('\n')) {
      const m = /^changed: (\w{1,40})$/.exec(line);
      if (m && !seen.has(m[1])) seen.add(m[1]);
    }
    for (const sub of seen) {
      for (const fn of this.systemListeners) {
        try {
          fn(sub);
        } catch {
          // A listener's fault is not the peer's: the connection goes on.
        }
      }
    }
  }

  /** Closes once: everything waiting is rejected with `err`, the close listeners hear it. */
  private fail(err: MpdConnectionError): void {
    if (this.closeError) return;
    this.closeError = err;
    this.phase = 'closed';
    this.reader.fail(err);
    this.socket.destroy();
    if (this.opened) {
      clearTimeout(this.opened.timer);
      this.opened.reject(err);
      this.opened = undefined;
    }
    for (const w of [...this.inflight, ...this.queue]) {
      clearTimeout(w.timer);
      w.reject(err);
    }
    this.inflight.length = 0;
    this.queue.length = 0;
    this.lines = [];
    this.binary = [];
    for (const fn of this.closeListeners.splice(0)) {
      try {
        fn(err);
      } catch {
        // The listener's own fault; the connection is closed either way.
      }
    }
  }
}

function greetingError(err: MpdConnectionError, max: number): MpdConnectionError {
  return err.code === 'MpdTooLarge' ? new MpdConnectionError('MpdGarbage', `not an MPD greeting (no line end within ${max} bytes)`) : err;
}
