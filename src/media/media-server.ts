import { randomBytes } from 'node:crypto';
import { open, type FileHandle } from 'node:fs/promises';
import { createServer, type IncomingMessage, type OutgoingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import { isIP, type AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream';
import type { Socket } from 'node:net';
import { maskToken, type Logger } from '../logger';
import { installConnectionLimits, isLoopback } from '../net/connection-limits';
import { LimitedLog } from '../logging/limited-log';
import { parseRange } from './range';
import { ItemUrls } from './item-urls';
import type { MediaCatalog, MediaHost, MediaItem } from './types';

export interface MediaServerOptions {
  /** Address to bind; default 127.0.0.1. Speakers on the LAN need a LAN address or 0.0.0.0. */
  host?: string;
  /** Default 0: any free port. */
  port?: number;
  /**
   * Host name or IP put into published URLs. Default: the bound address, or for a wildcard
   * bind (0.0.0.0, ::) the first non-internal IPv4 address, since a speaker cannot fetch
   * from 0.0.0.0.
   */
  advertiseHost?: string;
  logger: Logger;
  /** Open connections in total / from one address (default 500 / 50). */
  maxConnections?: number;
  maxConnectionsPerAddress?: number;
  /** Apply the per-address limit to loopback clients too (default: no, they are the hub's virtual speakers). */
  limitLoopback?: boolean;
  /** A response that makes no progress (the client stopped reading) this long is dropped. Default 60 s. */
  sendTimeoutMs?: number;
  /** A released URL keeps working this long (default 60 s): a speaker may still be reading its tail. */
  releaseGraceMs?: number;
}

interface Published {
  file: string;
  contentType: string;
}

/** Capability ids are 16 random bytes in base64url: 22 characters. */
const ID_PATTERN = /^[A-Za-z0-9_-]{22}$/;
const MEDIA_PATH = /^\/media\/([^/]+)(?:\/[^/]*)?$/;

/**
 * DLNA renderers want this on every media response: OP=01 says byte seeking works, FLAGS
 * says DLNA 1.5 with streaming, interactive and background transfer. No DLNA.ORG_PN: a
 * wrong profile name is worse than none.
 */
const DLNA_CONTENT_FEATURES = 'DLNA.ORG_OP=01;DLNA.ORG_CI=0;DLNA.ORG_FLAGS=01700000000000000000000000000000';
const DLNA_TRANSFER_MODES = new Map([
  ['streaming', 'Streaming'],
  ['interactive', 'Interactive'],
  ['background', 'Background'],
]);

/**
 * Serves published files to speakers. Only files handed to publish() are reachable, each
 * under an unguessable id; every other path, and an unknown id, gets the same bare 404, so
 * a prober learns nothing. Ids are never logged in clear: a media URL is a secret.
 */
export class MediaServer implements MediaHost {
  private readonly host: string;
  private readonly port: number;
  private readonly advertiseHost: string | undefined;
  private readonly log: Logger;
  private readonly byId = new Map<string, Published>();
  private readonly idByFile = new Map<string, string>();
  /** Ids released and waiting for their grace period to end. */
  private readonly expiring = new Map<string, NodeJS.Timeout>();
  private readonly options: MediaServerOptions;
  private readonly stalled: LimitedLog;
  private server: Server | undefined;
  private origin: string | undefined;
  private items?: ItemUrls;

  constructor(options: MediaServerOptions) {
    this.host = options.host ?? '127.0.0.1';
    this.port = options.port ?? 0;
    this.advertiseHost = options.advertiseHost;
    this.log = options.logger;
    this.options = options;
    this.stalled = new LimitedLog(this.log, 'media download dropped: no progress within the send timeout');
  }

  /** Published URLs (ids) that currently work; released ones count until their grace ends. */
  get publishedCount(): number {
    return this.byId.size;
  }

  /** http://host:port of the running server; throws before start(). */
  get baseUrl(): string {
    if (!this.origin) throw new Error('MediaServer is not started');
    return this.origin;
  }

  async start(): Promise<void> {
    if (this.server) return;
    const server = createServer(
      { headersTimeout: 10_000, requestTimeout: 30_000, connectionsCheckingInterval: 1000, keepAlive: true, keepAliveInitialDelay: 30_000 },
      (req, res) => {
        this.handle(req, res).catch((e: unknown) => this.fail(res, e));
      },
    );
    // Inactivity on the socket (nothing read, nothing sent): a stalled download or an idle keep-alive.
    server.setTimeout(this.options.sendTimeoutMs ?? 60_000, (socket: Socket) => {
      if (socket.bytesWritten > 0 || socket.writableLength > 0) this.stalled.warn({ remote: socket.remoteAddress, pending: socket.writableLength });
      socket.destroy();
    });
    installConnectionLimits(
      server,
      {
        maxConnections: this.options.maxConnections ?? 1000,
        maxConnectionsPerAddress: this.options.maxConnectionsPerAddress ?? 50,
        // Virtual speakers fetch from the hub's own address, one connection each.
        perAddressExempt: this.options.limitLoopback ? undefined : isLoopback,
      },
      this.log,
      'media server',
    );
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, this.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const { address, port } = server.address() as AddressInfo;
    this.server = server;
    this.origin = `http://${urlHost(this.advertiseHost ?? reachableAddress(address))}:${port}`;
    this.log.info({ bind: `${address}:${port}`, baseUrl: this.origin }, 'media server listening');
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    this.origin = undefined;
    for (const t of this.expiring.values()) clearTimeout(t);
    this.expiring.clear();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      // Speakers keep connections open (and stream for minutes); don't wait for them.
      server.closeAllConnections();
    });
  }

  publish(file: string, contentType: string): string {
    const base = this.baseUrl; // throws before start(), before anything is registered
    if (/[^\t\x20-\x7e]/.test(contentType)) throw new TypeError(`invalid content type: ${JSON.stringify(contentType)}`);
    const absolute = path.resolve(file);
    let id = this.idByFile.get(absolute);
    if (!id) {
      id = randomBytes(16).toString('base64url');
      this.idByFile.set(absolute, id);
    }
    this.cancelExpiry(id);
    this.byId.set(id, { file: absolute, contentType });
    return `${base}/media/${id}/${encodeURIComponent(path.basename(absolute))}`;
  }

  /** Serves the catalog's items at stable URLs (itemUrl), for the DLNA MediaServer. */
  serveCatalog(catalog: MediaCatalog): void {
    this.items = new ItemUrls(catalog);
  }

  /** A URL of a library item that works while the hub runs and the item is in the library (item-urls.ts). */
  itemUrl(item: MediaItem): string {
    if (!this.items) throw new Error('MediaServer: serveCatalog() first');
    return `${this.baseUrl}${this.items.pathOf(item)}`;
  }

  /** Whether a URL is one of this server's item URLs, of an item still in the library. */
  isItemUrl(url: string): boolean {
    if (!this.items || !this.origin) return false;
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      return false;
    }
    return u.origin === new URL(this.origin).origin && this.items.resolve(u.pathname) !== undefined;
  }

  release(url: string): void {
    const id = this.idOf(url);
    if (!id || this.expiring.has(id)) return;
    const timer = setTimeout(() => this.expire(id), this.options.releaseGraceMs ?? 60_000);
    timer.unref();
    this.expiring.set(id, timer);
  }

  retain(url: string): boolean {
    const id = this.idOf(url);
    if (id) this.cancelExpiry(id);
    return id !== undefined;
  }

  private expire(id: string): void {
    this.expiring.delete(id);
    const entry = this.byId.get(id);
    if (!entry) return;
    this.byId.delete(id);
    if (this.idByFile.get(entry.file) === id) this.idByFile.delete(entry.file);
    this.log.debug({ id: maskToken(id) }, 'media URL expired');
  }

  private cancelExpiry(id: string): void {
    const t = this.expiring.get(id);
    if (t) clearTimeout(t);
    this.expiring.delete(id);
  }

  private idOf(url: string): string | undefined {
    const q = url.indexOf('/media/');
    if (q < 0) return undefined;
    const id = MEDIA_PATH.exec(url.slice(q).split('?', 1)[0])?.[1];
    return id && this.byId.has(id) ? id : undefined;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const pathname = (req.url ?? '/').split('?', 1)[0];
    const id = MEDIA_PATH.exec(pathname)?.[1];
    const logged = { method: req.method, path: loggablePath(pathname), range: req.headers.range };

    if (req.method !== 'GET' && req.method !== 'HEAD') {
      this.log.debug({ ...logged, status: 405 }, 'media request');
      plain(res, 405, 'Method Not Allowed', { Allow: 'GET, HEAD' });
      return;
    }
    const entry = id && ID_PATTERN.test(id) ? this.byId.get(id) : this.items?.resolve(pathname);
    if (!entry) {
      this.log.debug({ ...logged, status: 404 }, 'media request');
      notFound(res);
      return;
    }

    let fh: FileHandle;
    try {
      fh = await open(entry.file, 'r');
    } catch (e) {
      this.log.warn({ file: entry.file, err: e }, 'media server: published file is unreadable');
      notFound(res);
      return;
    }
    let streaming = false;
    try {
      const st = await fh.stat();
      if (!st.isFile()) {
        notFound(res);
        return;
      }
      const etag = `"${st.size.toString(16)}-${Math.floor(st.mtimeMs).toString(16)}"`;
      const lastModified = st.mtime.toUTCString();
      const headers: OutgoingHttpHeaders = {
        'Content-Type': entry.contentType,
        'Accept-Ranges': 'bytes',
        ETag: etag,
        'Last-Modified': lastModified,
        'contentFeatures.dlna.org': DLNA_CONTENT_FEATURES,
      };
      const mode = DLNA_TRANSFER_MODES.get(
        String(req.headers['transfermode.dlna.org'] ?? '')
          .trim()
          .toLowerCase(),
      );
      if (mode) headers['transferMode.dlna.org'] = mode;

      let range = parseRange(req.headers.range, st.size);
      // If-Range: the client's cached copy is stale, so it must get the whole file.
      const ifRange = req.headers['if-range'];
      if (range !== undefined && ifRange !== undefined && ifRange !== etag && ifRange !== lastModified) range = undefined;

      if (range === 'unsatisfiable') {
        this.log.debug({ ...logged, status: 416, file: path.basename(entry.file) }, 'media request');
        res.writeHead(416, { ...headers, 'Content-Range': `bytes */${st.size}`, 'Content-Length': 0 });
        res.end();
        return;
      }
      const { start, end } = range ?? { start: 0, end: st.size - 1 };
      const status = range ? 206 : 200;
      headers['Content-Length'] = end - start + 1;
      if (range) headers['Content-Range'] = `bytes ${start}-${end}/${st.size}`;
      this.log.debug({ ...logged, status, file: path.basename(entry.file) }, 'media request');
      res.writeHead(status, headers);
      if (req.method === 'HEAD' || end < start) {
        res.end();
        return;
      }
      streaming = true; // the read stream now owns the handle and closes it
      pipeline(fh.createReadStream({ start, end }), res, (err) => {
        // Renderers routinely hang up mid-file (seek, skip, stop); that is not a fault.
        if (err) this.log.debug({ ...logged, err: err.message }, 'media response ended early');
      });
    } finally {
      if (!streaming) await fh.close();
    }
  }

  private fail(res: ServerResponse, e: unknown): void {
    this.log.warn({ err: e }, 'media server: request failed');
    if (!res.headersSent) {
      plain(res, 500, 'Internal Server Error');
    } else {
      res.destroy();
    }
  }
}

/** The request path with anything that may be a capability id masked. */
function loggablePath(pathname: string): string {
  const [, first, second] = pathname.split('/', 3);
  if (first === 'library') return `/library/${second?.slice(0, 20)}/…`;
  if (first !== 'media' || second === undefined) return pathname.slice(0, 100);
  return `/media/${maskToken(second)}/…`;
}

function plain(res: ServerResponse, status: number, text: string, headers: OutgoingHttpHeaders = {}): void {
  const body = `${text}\n`;
  res.writeHead(status, { ...headers, 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function notFound(res: ServerResponse): void {
  plain(res, 404, 'Not Found');
}

/** A speaker cannot connect to a wildcard address; pick one it can reach. */
function reachableAddress(bound: string): string {
  if (bound !== '0.0.0.0' && bound !== '::') return bound;
  for (const addresses of Object.values(networkInterfaces())) {
    for (const a of addresses ?? []) {
      if (a.family === 'IPv4' && !a.internal) return a.address;
    }
  }
  return '127.0.0.1';
}

function urlHost(host: string): string {
  // IPv6 literals go in brackets; a zone id's '%' must itself be percent-encoded.
  return isIP(host) === 6 ? `[${host.replace('%', '%25')}]` : host;
}
