import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { encodeWav } from '../../src/audio/wav';

/**
 * A loopback web server for the media URLs a test hands Home Assistant's side: /music*.wav is
 * 60 s, /chime*.wav 1.5 s. Every request is recorded, so a test sees a speaker fetch a URL.
 */
export async function mediaServer() {
  const rate = 8000;
  const music = encodeWav(new Int16Array(rate * 60), rate, { title: 'Music', artist: '', album: '' });
  const chime = encodeWav(new Int16Array(Math.round(rate * 1.5)), rate, { title: 'Chime', artist: '', album: '' });
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    requests.push(req.url ?? '');
    const body = req.url?.startsWith('/chime') ? chime : music;
    res.writeHead(200, { 'Content-Type': 'audio/wav', 'Content-Length': body.length });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    requests,
    url: (p: string) => `http://127.0.0.1:${port}${p}`,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}
