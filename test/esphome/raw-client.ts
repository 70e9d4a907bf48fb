import { connect, type Socket } from 'node:net';
import { writeVarint } from '../../src/esphome/frame-codec';

/** A hand-made plaintext frame: indicator 0, VarInt length, VarInt id, body. */
export function frame(id: number, body: Buffer = Buffer.alloc(0)): Buffer {
  return Buffer.concat([Buffer.from([0]), writeVarint(body.length), writeVarint(id), body]);
}

/** HelloRequest { client_info: 'raw' } (field 1, string). */
export const HELLO = frame(1, Buffer.from([0x0a, 3, ...Buffer.from('raw')]));

/** A raw TCP client that records what it reads and when it closes (from localAddress, e.g. 127.0.0.2, when given). */
export async function rawClient(port: number, localAddress?: string) {
  const socket: Socket = connect({ port, host: '127.0.0.1', localAddress });
  let received = Buffer.alloc(0);
  let closed = false;
  socket.on('data', (d: Buffer) => {
    received = Buffer.concat([received, d]).subarray(-65536);
  });
  socket.on('error', () => undefined);
  socket.on('close', () => {
    closed = true;
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return {
    socket,
    received: () => received,
    closed: () => closed,
    /** Message ids in what was received (plaintext frames). */
    ids(): number[] {
      const ids: number[] = [];
      let p = 0;
      const b = received;
      const varint = () => {
        let v = 0;
        for (let i = 0; i < 5 && p < b.length; i++) {
          const x = b[p++];
          v += (x & 0x7f) * 2 ** (7 * i);
          if (!(x & 0x80)) return v;
        }
        return -1;
      };
      while (p < b.length && b[p] === 0) {
        p++;
        const len = varint();
        const id = varint();
        if (len < 0 || id < 0 || p + len > b.length) break;
        ids.push(id);
        p += len;
      }
      return ids;
    },
  };
}
