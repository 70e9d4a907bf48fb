/**
 * The native API's plaintext framing: a zero byte, VarInt length of the message, VarInt
 * message id, then the protobuf message. The decoder holds at most one frame (bounded by
 * maxMessageBytes) and refuses anything else with a FrameError, so a client can neither make
 * the hub buffer without end nor send it into an undefined state.
 */

/** Why a connection's input was refused (the connection is then closed). */
export class FrameError extends Error {
  constructor(
    readonly code: 'BadIndicator' | 'BadVarint' | 'MessageTooLarge' | 'BadHandshake' | 'WrongKey' | 'BadMessage',
    message: string,
  ) {
    super(message);
  }
}

/** What a transport gives back for received bytes: whole messages. */
export interface Received {
  id: number;
  data: Buffer;
}

/** Both transports (plaintext and Noise) seen from the connection. */
export interface Transport {
  readonly kind: 'plaintext' | 'noise';
  /** Takes bytes from the socket; the whole messages in them, in order. Throws FrameError. */
  receive(chunk: Buffer): Received[];
  /** The bytes of one message to write, or undefined before the transport can carry messages. */
  frame(id: number, data: Buffer): Buffer | undefined;
}

/** Reads a VarInt at `pos` of at most 5 bytes (32 bits); undefined when more bytes are needed. */
function readVarint(buf: Buffer, pos: number): { value: number; next: number } | undefined {
  let value = 0;
  for (let i = 0; i < 5; i++) {
    if (pos + i >= buf.length) return undefined;
    const b = buf[pos + i];
    value += (b & 0x7f) * 2 ** (7 * i);
    if ((b & 0x80) === 0) return { value, next: pos + i + 1 };
  }
  throw new FrameError('BadVarint', 'a VarInt longer than 32 bits');
}

export function writeVarint(n: number): Buffer {
  const out: number[] = [];
  let v = n >>> 0;
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return Buffer.from(out);
}

export class PlaintextTransport implements Transport {
  readonly kind = 'plaintext';
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly maxMessageBytes: number) {}

  receive(chunk: Buffer): Received[] {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    const out: Received[] = [];
    for (;;) {
      const buf = this.pending;
      if (buf.length === 0) break;
      // 0x01 is the encrypted protocol's indicator: a client that expects a key the hub has not got.
      if (buf[0] !== 0x00)
        throw new FrameError(
          'BadIndicator',
          buf[0] === 0x01 ? 'the client speaks the encrypted protocol, the hub plaintext' : `bad indicator byte ${buf[0]}`,
        );
      const len = readVarint(buf, 1);
      if (!len) break;
      if (len.value > this.maxMessageBytes)
        throw new FrameError('MessageTooLarge', `a message of ${len.value} bytes (the bound is ${this.maxMessageBytes})`);
      const type = readVarint(buf, len.next);
      if (!type) break;
      if (type.value > 0xffff) throw new FrameError('BadVarint', `message id ${type.value} out of range`);
      const end = type.next + len.value;
      if (buf.length < end) break;
      out.push({ id: type.value, data: buf.subarray(type.next, end) });
      this.pending = buf.subarray(end);
    }
    // Keep no reference to a large chunk for a small remainder.
    if (this.pending.length && this.pending.byteOffset > 0) this.pending = Buffer.from(this.pending);
    return out;
  }

  frame(id: number, data: Buffer): Buffer {
    return Buffer.concat([Buffer.from([0]), writeVarint(data.length), writeVarint(id), data]);
  }
}
