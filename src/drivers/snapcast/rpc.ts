import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';

/** A JSON-RPC error answer from snapserver (e.g. -32603 for an unknown client id). */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly method: string,
  ) {
    super(`${method}: ${message} (JSON-RPC ${code})`);
    this.name = 'RpcError';
  }
}

export interface RpcEvents {
  notification: [method: string, params: unknown];
  close: [error?: Error];
}

interface Pending {
  method: string;
  resolve: (result: unknown) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

/** A single line longer than this is not snapserver talking: drop the connection. */
const MAX_LINE = 16 * 1024 * 1024;

/**
 * JSON-RPC 2.0 over one TCP connection, framed as snapserver frames it: one JSON object
 * per line (it terminates lines with \r\n). Requests are matched to answers by id;
 * everything without an id is a notification.
 */
export class RpcConnection extends EventEmitter<RpcEvents> {
  private nextId = 1;
  private buffer = '';
  private readonly pending = new Map<number, Pending>();
  private closed = false;

  constructor(
    private readonly socket: Socket,
    private readonly timeoutMs: number,
  ) {
    super();
    socket.setEncoding('utf8');
    socket.setNoDelay(true);
    socket.on('data', (chunk: string) => this.onData(chunk));
    socket.on('error', (e) => this.shutdown(e));
    socket.on('close', () => this.shutdown());
  }

  get isOpen(): boolean {
    return !this.closed;
  }

  request<T = unknown>(method: string, params?: Record<string, unknown>): Promise<T> {
    if (this.closed) return Promise.reject(new Error(`${method}: not connected to snapserver`));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method}: snapserver did not answer within ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      this.pending.set(id, { method, resolve: resolve as (r: unknown) => void, reject, timer });
      this.socket.write(`${JSON.stringify({ id, jsonrpc: '2.0', method, ...(params ? { params } : {}) })}\r\n`);
    });
  }

  close(): void {
    this.socket.destroy();
    this.shutdown();
  }

  private onData(chunk: string): void {
    this.buffer += chunk;
    let nl: number;
    while ((nl = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, nl).trim();
      this.buffer = this.buffer.slice(nl + 1);
      if (line) this.onLine(line);
    }
    if (this.buffer.length > MAX_LINE) this.shutdown(new Error('snapserver sent an overlong line'));
  }

  private onLine(line: string): void {
    let msg: unknown;
    try {
      msg = JSON.parse(line);
    } catch {
      this.shutdown(new Error('snapserver sent a line that is not JSON'));
      return;
    }
    // A batch answer is an array; the hub sends no batches but accepting one costs nothing.
    for (const m of Array.isArray(msg) ? msg : [msg]) this.onMessage(m as Record<string, unknown>);
  }

  private onMessage(m: Record<string, unknown>): void {
    if (typeof m !== 'object' || m === null) return;
    if (typeof m.method === 'string' && m.id === undefined) {
      this.emit('notification', m.method, m.params);
      return;
    }
    const p = typeof m.id === 'number' ? this.pending.get(m.id) : undefined;
    if (!p) return;
    this.pending.delete(m.id as number);
    clearTimeout(p.timer);
    const err = m.error as { code?: number; message?: string } | undefined;
    if (err) p.reject(new RpcError(err.code ?? 0, err.message ?? 'error', p.method));
    else p.resolve(m.result);
  }

  private shutdown(error?: Error): void {
    if (this.closed) return;
    this.closed = true;
    this.socket.destroy();
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(new Error(`${p.method}: connection to snapserver lost`));
    }
    this.pending.clear();
    this.emit('close', error);
  }
}
