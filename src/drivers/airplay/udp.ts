import { createSocket, type Socket } from 'node:dgram';
import { performance } from 'node:perf_hooks';

/** Seconds between 1900 (NTP epoch) and 1970. */
const NTP_EPOCH_OFFSET = 2208988800;
const origin = Date.now() - performance.now();

/** Wall-clock ms with sub-ms resolution, monotonic within the process. */
export function nowMs(): number {
  return origin + performance.now();
}

/** Writes an NTP timestamp (seconds since 1900, 32.32 fixed point) for `ms` at `offset`. */
export function writeNtp(buf: Buffer, offset: number, ms: number): void {
  const secs = Math.floor(ms / 1000);
  const frac = Math.floor(((ms - secs * 1000) / 1000) * 2 ** 32);
  buf.writeUInt32BE((secs + NTP_EPOCH_OFFSET) >>> 0, offset);
  buf.writeUInt32BE(frac >>> 0, offset + 4);
}

export interface RetransmitSource {
  /** The stored RTP packet for `seq`, when it is still kept. */
  packet(seq: number): Buffer | undefined;
  /** The hub answered a timing request from `host` (a receiver of this source). */
  timingAnswered?(host: string): void;
}

/**
 * The driver's two UDP sockets, shared by every receiver: the timing port answers the
 * receivers' NTP-style timing requests (0xD2 → 0xD3) with the hub's clock; the control port
 * sends audio and sync packets and answers retransmit requests (0xD5 → 0xD6).
 */
export class UdpChannels {
  timing!: Socket;
  control!: Socket;
  /** Receiver address:controlPort → what can resend its packets. */
  private readonly sources = new Map<string, RetransmitSource>();

  async open(): Promise<void> {
    this.timing = await bind((msg, rinfo) => {
      if (msg.length < 32 || msg[1] !== 0xd2) return;
      const reply = Buffer.alloc(32);
      reply[0] = 0x80;
      reply[1] = 0xd3;
      reply.writeUInt16BE(7, 2);
      msg.copy(reply, 8, 24, 32); // their transmit time is our origin
      const now = nowMs();
      writeNtp(reply, 16, now);
      writeNtp(reply, 24, now);
      safeSend(this.timing, reply, rinfo.port, rinfo.address);
      // Each stream the receiver plays hears of it (a sync packet follows while it starts).
      for (const [key, src] of this.sources) if (key.startsWith(`${rinfo.address}:`)) src.timingAnswered?.(rinfo.address);
    });
    this.control = await bind((msg, rinfo) => {
      if (msg.length < 8 || (msg[1] & 0x7f) !== 0x55) return;
      const src = this.sources.get(`${rinfo.address}:${rinfo.port}`);
      if (!src) return;
      const first = msg.readUInt16BE(4);
      const count = Math.min(msg.readUInt16BE(6), 64);
      for (let i = 0; i < count; i++) {
        const p = src.packet((first + i) & 0xffff);
        if (!p) continue;
        const head = Buffer.from([0x80, 0xd6, 0x00, 0x01]);
        safeSend(this.control, Buffer.concat([head, p]), rinfo.port, rinfo.address);
      }
    });
  }

  register(address: string, controlPort: number, src: RetransmitSource): void {
    this.sources.set(`${address}:${controlPort}`, src);
  }
  unregister(address: string, controlPort: number): void {
    this.sources.delete(`${address}:${controlPort}`);
  }

  send(buf: Buffer, port: number, address: string): void {
    safeSend(this.control, buf, port, address);
  }

  close(): void {
    this.timing?.close();
    this.control?.close();
  }
}

/**
 * dgram.send throws synchronously on a bad port or address, and these sends run in timers:
 * a throw there would end the process. Ports come checked from the session (transportPorts);
 * this is the last guard, and a datagram that cannot go is dropped like a lost one.
 */
function safeSend(socket: Socket, buf: Buffer, port: number, address: string): void {
  if (!Number.isInteger(port) || port < 1 || port > 65535) return;
  try {
    socket.send(buf, port, address, () => undefined);
  } catch {
    // Dropped: UDP audio tolerates loss, and the receiver asks for a retransmit if it cares.
  }
}

function bind(onMessage: (msg: Buffer, rinfo: { address: string; port: number }) => void): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = createSocket('udp4');
    s.on('message', onMessage);
    s.on('error', () => undefined);
    s.once('error', reject);
    s.bind(0, () => resolve(s));
  });
}
