/**
 * The GENA publisher's NOTIFY delivery (src/protocols/upnp/gena-publisher.ts) to a raw TCP
 * subscriber on loopback: one that answers, one that reads and never answers (delivered once
 * written, and the hub closes the socket), one that refuses, and one that is gone.
 */
import { once } from 'node:events';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { createLogger } from '../../../src/logger';
import { GENA_NT } from '../../../src/protocols/upnp/gena';
import { Gena } from '../../../src/protocols/upnp/gena-publisher';
import { eventually } from '../../helpers/wait';

const log = createLogger({ level: 'silent' });
const KEY = 'kitchen/AVTransport';

/** A subscriber's callback server: records each NOTIFY's SEQ and answers as `answer` says. */
async function subscriber(answer: (socket: Socket) => void) {
  const seqs: number[] = [];
  /** Connections the hub closed while the subscriber kept its side open. */
  let hubClosed = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    let text = '';
    socket.on('data', (c: Buffer) => {
      text += c.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      const length = Number(/content-length:\s*(\d+)/i.exec(text)?.[1] ?? NaN);
      if (end < 0 || text.length < end + 4 + length) return;
      seqs.push(Number(/\r\nseq:\s*(\d+)/i.exec(text)?.[1]));
      answer(socket);
    });
    socket.on('end', () => hubClosed++);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  const close = async () => {
    for (const s of sockets) s.destroy();
    server.close();
    await once(server, 'close');
  };
  return { seqs, port, close, hubClosed: () => hubClosed };
}

function subscribe(gena: Gena, port: number) {
  const a = gena.handle(
    'SUBSCRIBE',
    KEY,
    { nt: GENA_NT, callback: `<http://127.0.0.1:${port}/cb>`, timeout: 'Second-300' },
    '127.0.0.1',
    () => '<TransportState val="STOPPED"/>',
  );
  expect(a.status).toBe(200);
}

let gena: Gena;
beforeEach(() => {
  gena = new Gena({ maxPerService: 4, maxTotal: 8, maxSeconds: 600 }, log, '127.0.0.1', 'test');
});
afterEach(() => gena.close());

test('a subscriber that answers 200 gets the initial event and each change in order, and stays', async () => {
  const peer = await subscriber((s) => s.end('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'));
  try {
    subscribe(gena, peer.port);
    await eventually(() => peer.seqs.length === 1, 3000, 'the initial event');
    await gena.publish(KEY, '<Volume val="5"/>');
    await gena.publish(KEY, '<Volume val="6"/>');
    expect(peer.seqs).toEqual([0, 1, 2]);
    expect(gena.size).toBe(1);
  } finally {
    await peer.close();
  }
});

test('a subscriber that reads and never answers: delivered once written, the hub closes each socket, and stays subscribed', async () => {
  const peer = await subscriber(() => undefined);
  try {
    subscribe(gena, peer.port);
    // The first unanswered NOTIFY counts as delivered after the answer wait (1 s), and the hub hangs up.
    await eventually(() => peer.hubClosed() === 1, 4000, 'the hub closing the unanswered initial NOTIFY');
    await gena.publish(KEY, '<Volume val="5"/>');
    await eventually(() => peer.hubClosed() === 2, 2000, 'the hub closing the second NOTIFY');
    expect(peer.seqs).toEqual([0, 1]);
    expect(gena.size).toBe(1);
  } finally {
    await peer.close();
  }
});

test('a subscriber that answers 500 to its first event, or is not listening, is dropped', async () => {
  const refusing = await subscriber((s) => s.end('HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n'));
  try {
    subscribe(gena, refusing.port);
    await eventually(() => gena.size === 0, 3000, 'the refusing subscriber dropped');
    expect(refusing.seqs).toEqual([0]);
  } finally {
    await refusing.close();
  }
  const gone = await subscriber(() => undefined);
  await gone.close();
  subscribe(gena, gone.port);
  expect(gena.size).toBe(1);
  await eventually(() => gena.size === 0, 3000, 'the absent subscriber dropped');
});
