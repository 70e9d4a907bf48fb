import { createHash, randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';

/** A refusal or fault of a receiver, with a stable code the hub's messages carry. */
export type AirPlayErrorCode = 'AirPlayBusy' | 'AirPlayAuthFailed' | 'AirPlayUnreachable' | 'AirPlayTimeout' | 'AirPlayRefused' | 'AirPlayProtocol';

export class AirPlayError extends Error {
  constructor(
    readonly code: AirPlayErrorCode,
    message: string,
    readonly status?: number,
  ) {
    super(`${code}: ${message}`);
    this.name = 'AirPlayError';
  }
}

export interface RtspResponse {
  status: number;
  reason: string;
  headers: Record<string, string>;
  body: Buffer;
}

/** Longest response head / body accepted: a receiver cannot make the hub buffer without bound. */
const MAX_HEAD = 16 * 1024;
const MAX_BODY = 64 * 1024;

/**
 * One RTSP control connection to a receiver: requests go one at a time (RAOP receivers answer
 * in order), each with a CSeq and a timeout; a 401 is answered once with digest auth when a
 * password is known.
 */
export class RtspClient {
  private socket?: Socket;
  private cseq = 0;
  /** Received bytes not parsed yet: buf[0..len), grown by doubling so appends stay linear. */
  private buf = Buffer.alloc(0);
  private len = 0;
  /** How much of buf was already searched for the end of the head (never searched twice). */
  private scanned = 0;
  /** The head of a response whose body is still coming (parsed once). */
  private head?: { end: number; status: number; reason: string; headers: Record<string, string>; bodyLength: number };
  private waiter?: { cseq: number; resolve(r: RtspResponse): void; reject(e: Error): void };
  private chain: Promise<unknown> = Promise.resolve();
  private auth?: { realm: string; nonce: string };
  private closedError?: Error;
  /** Random per connection: receivers tie a session to it. */
  readonly clientInstance = randomBytes(8).toString('hex').toUpperCase();
  readonly dacpId = this.clientInstance;
  readonly activeRemote = String(randomBytes(4).readUInt32BE(0));
  sessionId?: string;
  localAddress = '';
  onClose?: (err?: Error) => void;

  constructor(
    readonly host: string,
    readonly port: number,
    private readonly timeoutMs: number,
    private readonly password?: string,
  ) {}

  connect(): Promise<void> {
    return new Promise((resolve, reject) => {
      const s = connect({ host: this.host, port: this.port });
      const timer = setTimeout(() => {
        s.destroy();
        reject(new AirPlayError('AirPlayTimeout', `no connection to ${this.host}:${this.port} within ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      s.once('connect', () => {
        clearTimeout(timer);
        s.setNoDelay(true);
        this.localAddress = (s.localAddress ?? '').replace(/^::ffff:/, '');
        this.socket = s;
        resolve();
      });
      s.once('error', (e) => {
        clearTimeout(timer);
        reject(new AirPlayError('AirPlayUnreachable', `${this.host}:${this.port}: ${e.message}`));
      });
      s.on('data', (d) => this.onData(d));
      s.on('close', () => {
        this.closedError ??= new AirPlayError('AirPlayUnreachable', `${this.host}:${this.port} closed the connection`);
        this.waiter?.reject(this.closedError);
        this.waiter = undefined;
        if (this.socket === s) this.onClose?.(this.closedError);
      });
      s.on('error', () => undefined);
    });
  }

  close(): void {
    this.closedError = new AirPlayError('AirPlayUnreachable', 'closed by the hub');
    const s = this.socket;
    this.socket = undefined;
    s?.destroy();
  }

  get open(): boolean {
    return !!this.socket && !this.socket.destroyed;
  }

  /** Sends a request and resolves with a 2xx response; throws a typed AirPlayError otherwise. */
  request(method: string, uri: string, headers: Record<string, string> = {}, body?: Buffer | string): Promise<RtspResponse> {
    const run = async (): Promise<RtspResponse> => {
      let res = await this.send(method, uri, headers, body);
      if (res.status === 401 && this.password && !this.auth) {
        const m = /realm="([^"]*)".*nonce="([^"]*)"/i.exec(res.headers['www-authenticate'] ?? '');
        if (m) {
          this.auth = { realm: m[1], nonce: m[2] };
          res = await this.send(method, uri, headers, body);
        }
      }
      if (res.status >= 200 && res.status < 300) return res;
      if (res.status === 401 || res.status === 403)
        throw new AirPlayError(
          'AirPlayAuthFailed',
          `${method}: ${this.password ? 'wrong password' : 'the receiver wants a password'} (${res.status})`,
          res.status,
        );
      if (res.status === 453) throw new AirPlayError('AirPlayBusy', `${method}: the receiver is busy with another sender (453)`, 453);
      throw new AirPlayError('AirPlayRefused', `${method} answered ${res.status} ${res.reason}`, res.status);
    };
    const p = this.chain.then(run, run);
    this.chain = p.catch(() => undefined);
    return p;
  }

  private send(method: string, uri: string, headers: Record<string, string>, body?: Buffer | string): Promise<RtspResponse> {
    const s = this.socket;
    if (!s || s.destroyed) return Promise.reject(this.closedError ?? new AirPlayError('AirPlayUnreachable', 'not connected'));
    const payload = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(body);
    const h: Record<string, string> = {
      CSeq: String(++this.cseq),
      'User-Agent': 'iTunes/11.0.4 (Windows; N)',
      'Client-Instance': this.clientInstance,
      'DACP-ID': this.dacpId,
      'Active-Remote': this.activeRemote,
      ...headers,
    };
    if (this.sessionId) h.Session = this.sessionId;
    if (payload) h['Content-Length'] = String(payload.length);
    if (this.auth && this.password) h.Authorization = this.digest(method, uri);
    const head = `${method} ${uri} RTSP/1.0\r\n${Object.entries(h)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('')}\r\n`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = undefined;
        reject(new AirPlayError('AirPlayTimeout', `${method}: no answer within ${this.timeoutMs} ms`));
        this.close();
      }, this.timeoutMs);
      this.waiter = {
        cseq: this.cseq,
        resolve: (r) => {
          clearTimeout(timer);
          resolve(r);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      s.write(payload ? Buffer.concat([Buffer.from(head), payload]) : head);
    });
  }

  /** RFC 2617 digest, as iTunes sends it (user "iTunes"). */
  private digest(method: string, uri: string): string {
    const md5 = (t: string) => createHash('md5').update(t).digest('hex');
    const { realm, nonce } = this.auth!;
    const ha1 = md5(`iTunes:${realm}:${this.password}`);
    const response = md5(`${ha1}:${nonce}:${md5(`${method}:${uri}`)}`);
    return `Digest username="iTunes", realm="${realm}", nonce="${nonce}", uri="${uri}", response="${response}"`;
  }

  /**
   * Parses the receiver's bytes in linear time within MAX_HEAD / MAX_BODY: the head is searched
   * for once (from where the last chunk ended) and parsed once. A response nobody waits for, or
   * one for another request (CSeq), is a protocol fault: the connection is dropped.
   */
  private onData(d: Buffer): void {
    if (!this.socket || this.closedError) return;
    if (this.len + d.length > this.buf.length) {
      const next = Buffer.alloc(Math.max(this.buf.length * 2, this.len + d.length, 4096));
      this.buf.copy(next, 0, 0, this.len);
      this.buf = next;
    }
    d.copy(this.buf, this.len);
    this.len += d.length;
    while (this.len > 0 && !this.closedError) {
      if (!this.head) {
        const end = this.buf.subarray(0, this.len).indexOf('\r\n\r\n', Math.max(0, this.scanned - 3));
        if (end < 0 || end > MAX_HEAD) {
          this.scanned = this.len;
          if (this.len > MAX_HEAD) this.fail('response head too long');
          return;
        }
        const head = this.parseHead(end);
        if (!head) return;
        this.head = head;
      }
      const { end, status, reason, headers, bodyLength } = this.head;
      if (this.len < end + 4 + bodyLength) return;
      const body = Buffer.from(this.buf.subarray(end + 4, end + 4 + bodyLength));
      this.buf.copy(this.buf, 0, end + 4 + bodyLength, this.len);
      this.len -= end + 4 + bodyLength;
      this.scanned = 0;
      this.head = undefined;
      const w = this.waiter;
      if (!w) return this.fail('an answer nobody asked for');
      const cseq = headers.cseq;
      if (cseq !== undefined && cseq !== String(w.cseq)) return this.fail(`answer for CSeq ${cseq.slice(0, 12)}, expected ${w.cseq}`);
      this.waiter = undefined;
      w.resolve({ status, reason, headers, body });
    }
  }

  private parseHead(end: number): RtspClient['head'] {
    const lines = this.buf.subarray(0, end).toString('latin1').split('\r\n');
    const m = /^RTSP\/1\.0 (\d{3}) ?(.*)$/.exec(lines[0]);
    if (!m) {
      this.fail(`bad status line '${lines[0].slice(0, 80)}'`);
      return undefined;
    }
    const headers: Record<string, string> = {};
    for (const l of lines.slice(1)) {
      const i = l.indexOf(':');
      if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
    }
    const cl = headers['content-length'] ?? '0';
    // Digits only: Number() would take '1e4', '0x10' or '' as lengths.
    const bodyLength = /^\d{1,9}$/.test(cl) ? Number(cl) : NaN;
    if (!(bodyLength <= MAX_BODY)) {
      this.fail(`bad Content-Length '${cl.slice(0, 20)}'`);
      return undefined;
    }
    return { end, status: Number(m[1]), reason: m[2].slice(0, 200), headers, bodyLength };
  }

  private fail(why: string): void {
    this.closedError = new AirPlayError('AirPlayProtocol', why);
    this.waiter?.reject(this.closedError);
    this.waiter = undefined;
    this.socket?.destroy();
  }
}
