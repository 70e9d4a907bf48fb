/**
 * httpRequest (src/protocols/upnp/http-client.ts) against a raw TCP peer on loopback that answers
 * as told: the answer, and each way an exchange fails — its error code and text, and that the
 * hub closed the connection itself where the peer would have kept it open.
 */
import { once } from 'node:events';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { httpRequest, NetworkError } from '../../../src/protocols/upnp/http-client';

let server: Server;
let url: string;
/** What the peer does with the next connection once it has read the request head. */
let behave: (socket: Socket) => void;
const closed: Promise<void>[] = [];

beforeAll(async () => {
  server = createServer((socket) => {
    closed.push(once(socket, 'close').then(() => undefined));
    let head = '';
    socket.on('data', (c: Buffer) => {
      if (head.includes('\r\n\r\n')) return;
      head += c.toString('latin1');
      if (head.includes('\r\n\r\n')) behave(socket);
    });
    socket.on('error', () => undefined);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/desc.xml`;
});

afterAll(async () => {
  server.close();
  await Promise.all(closed);
});

test('an answer: status, headers, body and the local address the peer reached us at', async () => {
  behave = (s) => s.end('HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nContent-Length: 5\r\nConnection: close\r\n\r\n<a/>\n');
  const r = await httpRequest(url, { timeoutMs: 2000 });
  expect(r).toMatchObject({ status: 200, body: '<a/>\n', localAddress: '127.0.0.1' });
  expect(r.headers['content-type']).toBe('text/xml');
});

test('no answer in time: ETIMEDOUT with the limit in its text, and the hub hangs up', async () => {
  behave = () => undefined;
  const hungUp = closed.length;
  const e = await httpRequest(url, { timeoutMs: 100 }).catch((x: unknown) => x);
  expect(e).toBeInstanceOf(NetworkError);
  expect(e).toMatchObject({ code: 'ETIMEDOUT', message: 'no answer within 100 ms' });
  await closed[hungUp];
});

test('an answer over maxBytes: E2BIG, and the hub hangs up on a peer still sending', async () => {
  behave = (s) => {
    s.write('HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n');
    s.write('x'.repeat(5000));
  };
  const hungUp = closed.length;
  const e = await httpRequest(url, { timeoutMs: 5000, maxBytes: 1000 }).catch((x: unknown) => x);
  expect(e).toMatchObject({ name: 'NetworkError', code: 'E2BIG', message: 'answer larger than 1000 bytes' });
  await closed[hungUp];
});

test('the peer closes in the middle of the answer: ECONNRESET', async () => {
  behave = (s) => {
    s.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten..');
    setImmediate(() => s.destroy());
  };
  const e = await httpRequest(url, { timeoutMs: 5000 }).catch((x: unknown) => x);
  expect(e).toMatchObject({ name: 'NetworkError', code: 'ECONNRESET' });
});

test('refused, and URLs it will not try', async () => {
  const port = (server.address() as AddressInfo).port;
  const free = createServer();
  free.listen(0, '127.0.0.1');
  await once(free, 'listening');
  const nobody = (free.address() as AddressInfo).port;
  free.close();
  await once(free, 'close');
  expect(nobody).not.toBe(port);
  await expect(httpRequest(`http://127.0.0.1:${nobody}/`, { timeoutMs: 2000 })).rejects.toMatchObject({ name: 'NetworkError', code: 'ECONNREFUSED' });
  await expect(httpRequest('not a url', { timeoutMs: 2000 })).rejects.toThrow(new TypeError('invalid URL'));
  await expect(httpRequest('https://127.0.0.1/', { timeoutMs: 2000 })).rejects.toThrow('unsupported protocol https:');
});
