import { createServer, type AddressInfo } from 'node:net';

/** Ports freePort handed out in this test file: the kernel may hand a port just closed out again. */
const handedOut = new Set<number>();

function anyPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * A TCP port free on loopback now (the lab programs and hubs the tests start listen on it),
 * and not one it gave before in this file. A suite asks for several before it starts the
 * program that binds them (snapserver's control, stream and source ports), and the kernel
 * hands a port just closed out again now and then (2 in 4,000 calls here, within 4 calls of
 * each other): the second bind fails (snapserver exits, or serves without its control port).
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await anyPort();
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
}
