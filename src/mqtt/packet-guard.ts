import type { Duplex } from 'node:stream';

/** A typed fault for a client that sent an MQTT packet above the broker's limit. */
export class PacketTooLargeError extends Error {
  constructor(
    readonly size: number,
    readonly limit: number,
  ) {
    super(`MQTT packet of ${size} bytes exceeds the broker limit of ${limit} bytes`);
    this.name = 'PacketTooLargeError';
  }
}

/**
 * Watches the MQTT fixed headers going by and reports the first packet whose remaining
 * length exceeds the limit, before its body is buffered anywhere: aedes itself has no packet
 * size limit and would assemble any packet a client announces.
 */
class PacketScanner {
  private state: 'type' | 'length' | 'body' = 'type';
  private length = 0;
  private multiplier = 1;
  private lengthBytes = 0;
  private left = 0;

  constructor(private readonly limit: number) {}

  /** The size of an oversized packet starting in this chunk, or 0 when all is well. */
  scan(chunk: Buffer): number {
    let i = 0;
    while (i < chunk.length) {
      if (this.state === 'body') {
        const take = Math.min(this.left, chunk.length - i);
        i += take;
        this.left -= take;
        if (this.left === 0) this.state = 'type';
      } else if (this.state === 'type') {
        i++;
        this.state = 'length';
        this.length = 0;
        this.multiplier = 1;
        this.lengthBytes = 0;
      } else {
        const b = chunk[i++];
        this.length += (b & 0x7f) * this.multiplier;
        this.multiplier *= 128;
        this.lengthBytes++;
        if (b & 0x80) {
          if (this.lengthBytes >= 4) return Number.MAX_SAFE_INTEGER;
          continue;
        }
        if (this.length > this.limit) return this.length;
        this.left = this.length;
        this.state = this.left > 0 ? 'body' : 'type';
      }
    }
    return 0;
  }
}

/**
 * Puts the size guard on a connection's incoming side. It sits in push(), where the transport
 * hands over what it read, so it costs no extra stream (and no extra event-loop turn) on the
 * path of every packet; an oversized packet destroys the connection.
 */
export function guardPackets(transport: Duplex, limit: number, onTooLarge: (e: PacketTooLargeError) => void): Duplex {
  const scanner = new PacketScanner(limit);
  const push = transport.push.bind(transport);
  transport.push = (chunk: unknown, encoding?: BufferEncoding): boolean => {
    if (Buffer.isBuffer(chunk)) {
      const size = scanner.scan(chunk);
      if (size) {
        const e = new PacketTooLargeError(size, limit);
        onTooLarge(e);
        transport.destroy();
        return false;
      }
    }
    return push(chunk, encoding);
  };
  return transport;
}
