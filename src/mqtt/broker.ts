import { createServer, type Server as TcpServer, type Socket } from 'node:net';
import type { IncomingMessage, Server as HttpServer } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocketServer } from 'ws';
import { Aedes, type AedesPublishPacket, type AuthenticateError, type Client } from 'aedes';
import type { Logger } from '../logger';
import type { KeyAuth, Rights } from './auth';
import { guardPackets } from './packet-guard';

/** An in-process listener: `done` tells the broker the message was taken (until then it holds the delivery). */
export type Deliver = (topic: string, payload: Buffer, done: () => void) => void;
type AedesDeliver = (packet: AedesPublishPacket, done: () => void) => void;

export interface EmbeddedBrokerOptions {
  auth: KeyAuth;
  logger: Logger;
  /** TCP listener; null: none (WebSocket and the hub's in-process link only). */
  tcp: { host: string; port: number } | null;
  /** The REST server, for MQTT over WebSocket at `path` on its port. */
  httpServer?: HttpServer;
  wsPath?: string;
  maxPacketBytes: number;
  maxClients: number;
  drainTimeoutMs: number;
  /** The hub's client id (its name at an external broker): no client may connect under it here. */
  hubClientId: string;
  /** Topics under which only the hub publishes (its state, responses, discovery). */
  isHubTopic(topic: string): boolean;
}

/** Where a refused publish is sent instead: no subscriber ever gets it (see authorizeForward). */
const REFUSED_TOPIC = '$speakerhub/refused';

/** The port was taken: the hub runs on without the TCP listener. */
export class BrokerPortBusyError extends Error {
  constructor(
    readonly host: string,
    readonly port: number,
  ) {
    super(`MQTT port ${host}:${port} is in use`);
    this.name = 'BrokerPortBusyError';
  }
}

/**
 * The embedded MQTT broker (aedes): TCP with TCP_NODELAY, MQTT over WebSocket on the REST
 * server's port, the keys as credentials, and bounds on packet size, clients and slow readers.
 */
export class EmbeddedBroker {
  private aedes?: Aedes;
  private tcp?: TcpServer;
  private wss?: WebSocketServer;
  private upgradeListener?: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  private readonly rights = new WeakMap<Client, Rights>();
  private readonly sockets = new Set<Duplex>();
  private lastRefusalLog = 0;
  /** The aedes listener of each in-process one, so that it can be removed again. */
  private readonly listeners = new WeakMap<Deliver, AedesDeliver>();
  /** Set when the TCP port was busy at start. */
  portBusy?: BrokerPortBusyError;

  constructor(private readonly options: EmbeddedBrokerOptions) {}

  /** The bound TCP address, when the TCP listener runs. */
  get address(): { host: string; port: number } | undefined {
    const a = this.tcp?.address();
    return a && typeof a === 'object' ? { host: a.address, port: a.port } : undefined;
  }

  get connectedClients(): number {
    return this.aedes?.connectedClients ?? 0;
  }

  async start(): Promise<void> {
    const { options } = this;
    this.aedes = await Aedes.createBroker({
      drainTimeout: options.drainTimeoutMs,
      // Wire events (PlaybackTimeChanged each second, device changes) are tiny; a higher
      // concurrency only widens what a stalled reader can hold up before drainTimeout.
      concurrency: 100,
      maxClientsIdLength: 64,
      heartbeatInterval: 60_000,
      connectTimeout: 10_000,
      preConnect: (_client, _packet, done) => {
        if (this.aedes!.connectedClients >= options.maxClients) {
          this.logRefusal({ reason: 'max clients' }, 'MQTT connection refused: the broker has mqtt.maxClients clients');
          return done(new Error('too many clients'), false);
        }
        done(null, true);
      },
      authenticate: (client, username, password, done) => {
        const rights = options.auth.rights(username, password);
        if (!rights || client.id === options.hubClientId) {
          this.logRefusal({ clientId: client.id.slice(0, 64) }, 'MQTT connection refused: wrong keys');
          const e = new Error('not authorized') as AuthenticateError;
          e.returnCode = 5 as AuthenticateError['returnCode'];
          return done(e, false);
        }
        this.rights.set(client, rights);
        done(null, true);
      },
      authorizePublish: (client, packet, done) => {
        if (packet.topic.startsWith('$')) return done(new Error('topics starting with $ are reserved'));
        // A dead client's last will (client null) was authorized when it connected.
        if (!client) return done(null);
        const rights = this.rights.get(client);
        if (rights === 'publish' && !options.isHubTopic(packet.topic)) {
          // Retained messages of clients would grow the broker's store without bound; only the hub's are kept.
          packet.retain = false;
          return done(null);
        }
        // MQTT 3.1.1 cannot tell a client its publish was refused without disconnecting it;
        // it keeps its connection, gets its normal acknowledgement, and nobody gets the message.
        this.logRefusal(
          { clientId: client?.id.slice(0, 64), topic: packet.topic.slice(0, 200) },
          'MQTT publish refused: the client has no right to publish there',
        );
        packet.topic = REFUSED_TOPIC;
        packet.retain = false;
        done(null);
      },
      authorizeSubscribe: (client, sub, done) => {
        // Clients get QoS 0: the broker keeps no offline queue for them, so a client that
        // subscribes and vanishes (clean: false) never grows the hub's memory.
        if (sub.qos > 0) sub.qos = 0;
        done(null, sub);
      },
      authorizeForward: (_client, packet) => (packet.topic === REFUSED_TOPIC ? null : packet),
    });
    this.aedes.on('clientError', (client, err) =>
      options.logger.debug({ clientId: client?.id?.slice(0, 64), err: err.message }, 'MQTT client error'),
    );
    this.aedes.on('connectionError', (_client, err) => options.logger.debug({ err: err.message }, 'MQTT connection error'));
    if (options.tcp) await this.listenTcp(options.tcp.host, options.tcp.port);
    if (options.httpServer) this.attachWebSocket(options.httpServer, options.wsPath ?? '/mqtt');
  }

  /**
   * Publishes as the broker itself (the hub's own messages: no client, so no authorizePublish):
   * retained messages are stored, QoS 1 ones queued for offline persistent subscribers, then
   * forwarded. Resolves once aedes has done all that.
   */
  publish(topic: string, payload: Buffer, qos: 0 | 1, retain: boolean): Promise<void> {
    const aedes = this.aedes;
    if (!aedes) return Promise.reject(new Error('the MQTT broker is stopped'));
    return new Promise((resolve, reject) =>
      aedes.publish({ cmd: 'publish', topic, payload, qos, retain, dup: false }, (err) => (err ? reject(err) : resolve())),
    );
  }

  /** Listens in process to what clients publish on `topic` (wildcards allowed; retained messages are not replayed). */
  subscribe(topic: string, deliver: Deliver): Promise<void> {
    const aedes = this.aedes;
    if (!aedes) return Promise.reject(new Error('the MQTT broker is stopped'));
    let fn = this.listeners.get(deliver);
    if (!fn) {
      fn = (packet, done) => deliver(packet.topic, Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload), done);
      this.listeners.set(deliver, fn);
    }
    const listener = fn;
    return new Promise((resolve, reject) => aedes.subscribe(topic, listener, (err?: Error) => (err ? reject(err) : resolve())));
  }

  unsubscribe(topic: string, deliver: Deliver): Promise<void> {
    const aedes = this.aedes;
    const fn = this.listeners.get(deliver);
    if (!aedes || !fn) return Promise.resolve();
    return new Promise((resolve) => aedes.unsubscribe(topic, fn, () => resolve()));
  }

  async stop(): Promise<void> {
    if (this.upgradeListener) this.options.httpServer?.off('upgrade', this.upgradeListener);
    for (const ws of this.wss?.clients ?? []) ws.terminate();
    this.wss?.close();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.tcp ? this.tcp.close(() => resolve()) : resolve()));
    await new Promise<void>((resolve) => (this.aedes ? this.aedes.close(() => resolve()) : resolve()));
    this.tcp = undefined;
    this.wss = undefined;
    this.aedes = undefined;
  }

  private listenTcp(host: string, port: number): Promise<void> {
    // Nagle on the broker side costs ~40 ms per QoS 1 hop (the PUBACK waits for a timer).
    const server = createServer({ noDelay: true }, (socket: Socket) => {
      socket.setNoDelay(true);
      this.handle(socket);
    });
    return new Promise((resolve, reject) => {
      server.once('error', (e: NodeJS.ErrnoException) => {
        if (e.code === 'EADDRINUSE' || e.code === 'EACCES') {
          this.portBusy = new BrokerPortBusyError(host, port);
          resolve();
        } else reject(e);
      });
      server.listen({ host, port }, () => {
        this.tcp = server;
        server.on('error', (e) => this.options.logger.warn({ err: e.message }, 'MQTT listener error'));
        resolve();
      });
    });
  }

  private attachWebSocket(http: HttpServer, path: string): void {
    // ws (a quarter of a MB of code) loads with the first MQTT-over-WebSocket client, not at start.
    let ws: ReturnType<typeof loadWs> | undefined;
    this.upgradeListener = (req, socket, head) => {
      if ((req.url ?? '').split('?')[0] !== path) return;
      (socket as Socket).setNoDelay?.(true);
      ws ??= loadWs();
      void ws.then(
        ({ WebSocketServer, createWebSocketStream }) => {
          if (!this.aedes) return void socket.destroy();
          // noServer: other paths' upgrades are left to whoever else listens on this server.
          this.wss ??= new WebSocketServer({ noServer: true, maxPayload: this.options.maxPacketBytes + 16, perMessageDeflate: false });
          this.wss.handleUpgrade(req, socket, head, (client) => this.handle(createWebSocketStream(client), req));
        },
        (e: unknown) => {
          this.options.logger.error({ err: e instanceof Error ? e.message : String(e) }, 'MQTT over WebSocket unavailable');
          socket.destroy();
        },
      );
    };
    http.on('upgrade', this.upgradeListener);
  }

  private handle(transport: Duplex, req?: IncomingMessage): void {
    const aedes = this.aedes;
    if (!aedes) return void transport.destroy();
    this.sockets.add(transport);
    transport.once('close', () => this.sockets.delete(transport));
    const conn = guardPackets(transport, this.options.maxPacketBytes, (e) =>
      this.logRefusal({ size: e.size, limit: e.limit }, 'MQTT connection closed: packet above mqtt.maxPayloadBytes'),
    );
    aedes.handle(conn, req);
  }

  /** Refusals come in floods from a misconfigured client: at most one line a second. */
  private logRefusal(fields: Record<string, unknown>, msg: string): void {
    const now = Date.now();
    if (now - this.lastRefusalLog < 1000) return;
    this.lastRefusalLog = now;
    this.options.logger.warn(fields, msg);
  }
}

function loadWs() {
  return import('ws');
}
