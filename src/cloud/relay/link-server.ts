import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { CloudContext } from '../context';
import { CLOSE_SHUTDOWN, LINK_PATH } from '../../protocols/cloud-link';
import { BrokerLink } from './hub-link';
import { LimitedLog } from '../../logging/limited-log';
import { digest } from '../secrets';

export interface LinkServerOptions {
  /** Ping interval; a hub that misses a whole interval's pong is dropped. */
  heartbeatMs: number;
  /** How long a forwarded request waits for the hub's answer. */
  requestTimeoutMs: number;
  /** Connected hubs, all users together (each holds a socket and a little memory). */
  maxLinks: number;
  /** Largest message a hub may send (a device_list of thousands of speakers fits). */
  maxPayload: number;
  /** How long an account's oldest link has to answer a ping before a newcomer beyond the cap replaces it. */
  probeMs?: number;
}

/**
 * Accepts hub links at /hub/link: `Authorization: Bearer <link token>` on the upgrade
 * request, refused with 401 before any WebSocket exists when the token is unknown.
 */
export class LinkServer {
  private readonly wss: WebSocketServer;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly sockets = new Set<WebSocket>();

  constructor(
    private readonly server: Server,
    private readonly ctx: CloudContext,
    private readonly options: LinkServerOptions,
  ) {
    this.capLog = new LimitedLog(ctx.logger, 'a hub link beyond its account cap (someone else may hold a link token of the account)');
    this.wss = new WebSocketServer({ noServer: true, maxPayload: options.maxPayload, perMessageDeflate: false });
    server.on('upgrade', this.onUpgrade);
    this.heartbeat = setInterval(() => this.beat(), options.heartbeatMs);
    this.heartbeat.unref();
  }

  private readonly onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    // An upgrade socket has no error listener of Node's any more: a peer resetting it (a
    // balancer closing after our 401) would otherwise be an uncaught exception.
    socket.on('error', () => undefined);
    const path = (req.url ?? '').split('?')[0];
    if (path !== LINK_PATH) return void refuse(socket, 404, 'Not Found');
    if (this.sockets.size >= this.options.maxLinks) return void refuse(socket, 503, 'Service Unavailable');
    const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    if (!m) return void refuse(socket, 401, 'Unauthorized');
    this.ctx.linkTokens.user(m[1]).then(
      (userId) => {
        if (!userId) return refuse(socket, 401, 'Unauthorized');
        if (socket.destroyed) return;
        this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws, userId, digest(m[1])));
      },
      (e: Error) => {
        this.ctx.logger.error({ err: e.message }, 'hub link authentication failed');
        refuse(socket, 503, 'Service Unavailable');
      },
    );
  };

  private accept(ws: WebSocket, userId: string, tokenDigest: string): void {
    const link = new BrokerLink(userId, ws, this.options.requestTimeoutMs, tokenDigest);
    this.sockets.add(ws);
    ws.on('error', () => undefined);
    ws.on('close', () => {
      this.sockets.delete(ws);
      this.ctx.registry.remove(link);
      this.closed++;
      this.ctx.logger.debug({ userId, links: this.sockets.size }, 'hub link closed');
    });
    void this.admit(link);
  }

  /**
   * A newcomer beyond the account's cap takes the place of the oldest link only if that one
   * fails a liveness ping (a hub restarted elsewhere, its old link half-open); while every
   * link answers, the newcomer is refused (CLOSE_LINK_LIMIT). So whoever else holds the link
   * token cannot evict the real hub by opening links; refusals are logged once per heartbeat.
   */
  private async admit(link: BrokerLink): Promise<void> {
    const reg = this.ctx.registry;
    if (reg.full(link.userId)) {
      const held = [...reg.hubsOf(link.userId)];
      const ms = this.options.probeMs ?? Math.min(5000, this.options.heartbeatMs);
      const alive = await Promise.all(held.map((l) => l.probe(ms)));
      if (link.ws.readyState !== link.ws.OPEN) return;
      // The oldest that did not answer gives way (one per newcomer).
      const dead = held.find((l, i) => !alive[i] && reg.hubsOf(link.userId).includes(l));
      if (dead) {
        reg.remove(dead);
        dead.replaced();
        this.capLog.warn({ userId: link.userId, outcome: 'replaced a link that did not answer a ping' });
      }
    }
    if (!reg.add(link)) {
      this.capLog.warn({ userId: link.userId, outcome: 'refused: every link of the account answers pings' });
      return link.refused();
    }
    this.opened++;
    this.ctx.logger.debug({ userId: link.userId, links: this.sockets.size }, 'hub linked');
  }

  /** Rate-limited: a token holder opening links in a loop must not flood the log. */
  private readonly capLog: LimitedLog;

  private opened = 0;
  private closed = 0;

  private beat(): void {
    // One line per heartbeat for all links together: thousands of links (or a relink storm)
    // must not mean thousands of lines.
    if (this.opened || this.closed) this.ctx.logger.info({ opened: this.opened, closed: this.closed, links: this.sockets.size }, 'hub links');
    this.opened = this.closed = 0;
    for (const link of this.ctx.registry.all()) {
      if (!link.alive) {
        link.ws.terminate();
        continue;
      }
      link.alive = false;
      link.ws.ping();
    }
  }

  close(): void {
    clearInterval(this.heartbeat);
    this.server.off('upgrade', this.onUpgrade);
    for (const ws of this.sockets) ws.close(CLOSE_SHUTDOWN, 'cloud shutting down');
    for (const ws of this.sockets) ws.terminate();
    this.wss.close();
  }
}

function refuse(socket: Duplex, status: number, text: string): void {
  if (socket.destroyed) return;
  socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}
