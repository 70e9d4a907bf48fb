// A child process driving the hub's ESPHome API with esphome-client (ESM-only, Noise and
// plaintext; written by others): `node esphome-client-probe.mjs <host> <port> [psk]`.
// Prints JSON lines: {evt:'connected', entities, devices}, {evt:'state', …} for every
// media_player state, {evt:'error', message}; reads JSON lines {id, options} on stdin and
// sends each as a media_player command.
import process from 'node:process';
import { createInterface } from 'node:readline';

// esphome-client asks for Node 22; on Node 20 it lacks only Promise.withResolvers.
Promise.withResolvers ??= function withResolvers() {
  let resolve;
  let reject;
  const promise = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
};
const { openEspHomeClient } = await import('esphome-client');

const [host, port, psk] = process.argv.slice(2);
const out = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);
try {
  const client = await openEspHomeClient({ host, port: Number(port), psk: psk || null, reconnect: false, connectTimeoutMs: 10000 });
  client.on('media_player', (ev) => out({ evt: 'state', ...ev }));
  out({
    evt: 'connected',
    entities: client.getEntitiesWithIds().map((e) => ({ id: e.id, key: e.key, name: e.name, type: e.type, deviceId: e.deviceId })),
    devices: client.subDevices(),
  });
  createInterface({ input: process.stdin }).on('line', (line) => {
    try {
      const { id, options } = JSON.parse(line);
      client.command(id, options);
      out({ evt: 'sent', id });
    } catch (e) {
      out({ evt: 'error', message: String(e) });
    }
  });
  process.stdin.on('end', () => {
    client.disconnect();
    process.exit(0);
  });
} catch (e) {
  out({ evt: 'error', message: String(e?.message ?? e), name: e?.name, cause: String(e?.cause ?? '') });
  process.exit(3);
}
