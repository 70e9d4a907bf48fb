import { request, type IncomingHttpHeaders } from 'node:http';
import { settleOnce } from '../../util/settle-once';

/**
 * One HTTP exchange with a renderer, on a fresh connection each time. libupnp closes its
 * sockets after every answer; a keep-alive agent would then reuse a dead socket and fail
 * with "socket hang up", so there is no agent and every request says Connection: close.
 */

export interface HttpOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  timeoutMs: number;
  /** Local address to send from: the configured interface's, so requests leave on that interface. */
  localAddress?: string;
  /** Larger answers are cut off with an error (descriptions are a few KiB). */
  maxBytes?: number;
}

export interface HttpResult {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** Our address on the connection: the one the renderer can reach us at. */
  localAddress?: string;
}

/** The renderer did not answer at all (refused, unreachable, timed out, hung up). */
export class NetworkError extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'NetworkError';
  }
}

const DEFAULT_MAX_BYTES = 1024 * 1024;

export function httpRequest(url: string, options: HttpOptions): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      reject(new TypeError('invalid URL'));
      return;
    }
    if (target.protocol !== 'http:') {
      reject(new TypeError(`unsupported protocol ${target.protocol}`));
      return;
    }
    const body = options.body === undefined ? undefined : Buffer.from(options.body, 'utf8');
    const headers: Record<string, string> = { ...options.headers, Connection: 'close' };
    if (body) headers['Content-Length'] = String(body.length);
    const req = request({
      protocol: 'http:',
      host: target.hostname.replace(/^\[|\]$/g, ''),
      port: target.port || 80,
      path: `${target.pathname}${target.search}`,
      method: options.method ?? 'GET',
      headers,
      agent: false,
      localAddress: options.localAddress,
    });
    // Every failure ends the connection: a timed-out or oversized answer must not go on arriving.
    const settle = settleOnce<HttpResult>(
      resolve,
      reject,
      { ms: options.timeoutMs, error: () => new NetworkError(`no answer within ${options.timeoutMs} ms`, 'ETIMEDOUT') },
      () => req.destroy(),
    );
    req.on('error', (e: NodeJS.ErrnoException) => settle(new NetworkError(e.message, e.code)));
    req.on('response', (res) => {
      const localAddress = res.socket?.localAddress;
      const chunks: Buffer[] = [];
      let size = 0;
      const max = options.maxBytes ?? DEFAULT_MAX_BYTES;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > max) {
          settle(new NetworkError(`answer larger than ${max} bytes`, 'E2BIG'));
          return;
        }
        chunks.push(c);
      });
      res.on('error', (e: NodeJS.ErrnoException) => settle(new NetworkError(e.message, e.code)));
      res.on('close', () => {
        if (!res.complete) settle(new NetworkError('connection closed in the middle of the answer', 'ECONNRESET'));
      });
      res.on('end', () =>
        settle.resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          localAddress,
        }),
      );
    });
    req.end(body);
  });
}
