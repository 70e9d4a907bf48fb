import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { encodeWav } from '../../src/audio/wav';

/** A loopback web server for media URLs: any path serves a 20 s WAV; /hang… accepts and never answers; /missing… is a 404. */
export async function webServer(title: string) {
  const rate = 8000;
  const wav = encodeWav(new Int16Array(rate * 20), rate, { title, artist: '', album: '' });
  const hanging = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    if (req.url?.startsWith('/hang')) {
      hanging.add(res);
      return;
    }
    if (req.url?.startsWith('/missing')) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
      return;
    }
    res.writeHead(200, { 'Content-Type': 'audio/wav', 'Content-Length': wav.length }).end(wav);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (p: string) => `http://127.0.0.1:${port}${p}`,
    close: () => {
      for (const r of hanging) r.destroy();
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}
