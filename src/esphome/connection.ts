import type { Socket } from 'node:net';
import type { Logger } from '../logger';
import type { MessageName } from './api-proto';
import { FrameError, type Transport } from './frame-codec';
import { decodeMessage, encodeMessage } from './messages';

/** What a connection asks of the server it belongs to. */
export interface ConnectionHost {
  hello(): Record<string, unknown>;
  deviceInfo(): Record<string, unknown>;
  /** Writes every entity of the model, then ListEntitiesDoneResponse. */
  listEntities(c: ApiConnection): void;
  /** The connection now wants states: send all of them. */
  subscribed(c: ApiConnection): void;
  command(c: ApiConnection, body: Record<string, unknown>): void;
}

/**
 * One native API client, as an explicit state machine:
 *   hello   → only HelloRequest, PingRequest and DisconnectRequest (anything else closes it,
 *             as ESPHome closes a connection that skips its setup);
 *   ready   → every request;
 *   closing → a DisconnectRequest was sent or answered; the socket ends;
 *   closed.
 * The hub never waits on a client: a reply that would grow its unread output beyond
 * maxWriteBufferBytes drops the client instead.
 */
type State = 'hello' | 'ready' | 'closing' | 'closed';

/** A client must say hello within this long. */
const HELLO_TIMEOUT_MS = 30_000;
/** ESPHome's keepalive: a silent client is pinged, and dropped if it stays silent as long again. */
const KEEPALIVE_MS = 60_000;

export class ApiConnection {
  private state: State = 'hello';
  /** Wants state updates (SubscribeStatesRequest). */
  subscribed = false;
  /** The model signature of the entities it listed: it must list again when they change. */
  listed?: string;
  clientInfo = '';
  /** Its commands running now (the server bounds them). */
  inflight = 0;
  private heard = true;
  private pinged = false;
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(
    private readonly socket: Socket,
    private readonly transport: Transport,
    private readonly host: ConnectionHost,
    private readonly log: Logger,
    private readonly maxWriteBufferBytes: number,
    private readonly onClosed: (c: ApiConnection) => void,
  ) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.data(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => this.closed());
    this.timers.push(
      setTimeout(() => {
        if (this.state === 'hello') this.drop('no hello');
      }, HELLO_TIMEOUT_MS),
    );
    this.timers.push(setInterval(() => this.keepalive(), KEEPALIVE_MS));
    for (const t of this.timers) t.unref();
  }

  /** The client's address (media URLs at the hub's machine are judged against it). */
  get remoteAddress(): string | undefined {
    return this.socket.remoteAddress;
  }

  get ready(): boolean {
    return this.state === 'ready';
  }

  /** Writes raw transport bytes (the Noise handshake). */
  writeRaw(b: Buffer): void {
    this.write(b);
  }

  send(name: MessageName, body: Record<string, unknown> = {}): void {
    if (this.state === 'closed') return;
    const { id, data } = encodeMessage(name, body);
    const frame = this.transport.frame(id, data);
    if (frame) this.write(frame);
  }

  /** Asks the client to disconnect (it reconnects and lists the entities again). */
  requestDisconnect(): void {
    if (this.state !== 'ready') return;
    this.send('DisconnectRequest');
    this.state = 'closing';
    // A client that does not answer is closed anyway.
    const t = setTimeout(() => this.socket.destroy(), 5000);
    t.unref();
    this.timers.push(t);
  }

  destroy(): void {
    this.socket.destroy();
  }

  private write(b: Buffer): void {
    if (this.socket.destroyed) return;
    if (this.socket.writableLength + b.length > this.maxWriteBufferBytes) {
      this.drop('client does not read: its output exceeded maxWriteBufferBytes');
      return;
    }
    this.socket.write(b);
  }

  private drop(reason: string): void {
    if (this.state === 'closed') return;
    this.log.info({ reason, client: this.clientInfo || undefined }, 'ESPHome API client dropped');
    this.state = 'closed';
    this.socket.destroy();
  }

  private keepalive(): void {
    if (this.state !== 'ready') return;
    if (this.heard) {
      this.heard = false;
      this.pinged = false;
      return;
    }
    if (this.pinged) return this.drop('no answer to keepalive');
    this.pinged = true;
    this.send('PingRequest');
  }

  private data(chunk: Buffer): void {
    if (this.state === 'closed') return;
    this.heard = true;
    try {
      for (const m of this.transport.receive(chunk)) {
        this.message(m.id, m.data);
        if (this.socket.destroyed) return;
      }
    } catch (e) {
      if (e instanceof FrameError) {
        this.log.info({ code: e.code, err: e.message }, 'ESPHome API: bad input, connection closed');
        this.state = 'closed';
        // end(): what the transport wrote to say why (a Noise failure reason) goes out first.
        this.socket.end();
        this.socket.destroySoon?.();
        const t = setTimeout(() => this.socket.destroy(), 1000);
        t.unref();
        this.timers.push(t);
        return;
      }
      throw e;
    }
  }

  private message(id: number, data: Buffer): void {
    let decoded;
    try {
      decoded = decodeMessage(id, data);
    } catch (e) {
      throw new FrameError('BadMessage', `message ${id} does not decode: ${String(e)}`);
    }
    // An id this server does not know: ignored, as ESPHome ignores a component it lacks.
    if (!decoded) return;
    const { name, body } = decoded;
    if (name === 'PingRequest') return this.send('PingResponse');
    if (name === 'PingResponse') return;
    if (name === 'DisconnectRequest') {
      this.send('DisconnectResponse');
      this.state = 'closing';
      this.socket.end();
      return;
    }
    if (name === 'DisconnectResponse') {
      this.state = 'closing';
      this.socket.end();
      return;
    }
    if (this.state === 'hello') {
      if (name !== 'HelloRequest') return this.drop(`${name} before HelloRequest`);
      this.clientInfo = String(body.client_info ?? '').slice(0, 64);
      this.send('HelloResponse', this.host.hello());
      this.state = 'ready';
      return;
    }
    if (this.state !== 'ready') return;
    switch (name) {
      case 'AuthenticationRequest':
        // Clients of API < 1.12 still send it; the hub has no password (plaintext has no token: use encryption).
        return this.send('AuthenticationResponse', { invalid_password: false });
      case 'DeviceInfoRequest':
        return this.send('DeviceInfoResponse', this.host.deviceInfo());
      case 'DeviceCapabilitiesRequest':
        return this.send('DeviceCapabilitiesResponse');
      case 'ListEntitiesRequest':
        return this.host.listEntities(this);
      case 'SubscribeStatesRequest':
        this.subscribed = true;
        return this.host.subscribed(this);
      case 'MediaPlayerCommandRequest':
        return this.host.command(this, body);
      case 'NoiseEncryptionSetKeyRequest':
        // The key is the hub's config (esphome.encryptionKey), not something a client sets.
        return this.send('NoiseEncryptionSetKeyResponse', { success: false });
      default:
        return;
    }
  }

  private closed(): void {
    this.state = 'closed';
    for (const t of this.timers) clearTimeout(t);
    this.onClosed(this);
  }
}
