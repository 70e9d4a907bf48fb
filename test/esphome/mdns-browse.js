'use strict';
/**
 * An mDNS browser for `_esphomelib._tcp` as Home Assistant's zeroconf runs one, in its own
 * network namespace: `node test/esphome/mdns-browse.js <interface address>`. bonjour-service's
 * Browser (multicast-dns underneath); prints {"evt":"up"|"down", name, port, txt, addresses}.
 */
const { Bonjour } = require('bonjour-service');

const address = process.argv[2];
const emit = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);
const bonjour = new Bonjour({ interface: address, bind: '0.0.0.0' }, (err) => emit({ evt: 'error', message: String(err) }));
const browser = bonjour.find({ type: 'esphomelib' });
browser.on('up', (s) => emit({ evt: 'up', name: s.name, port: s.port, host: s.host, txt: s.txt, addresses: s.addresses }));
browser.on('down', (s) => emit({ evt: 'down', name: s.name }));
const timer = setInterval(() => browser.update(), 1000);
emit({ evt: 'ready' });
process.on('SIGTERM', () => {
  clearInterval(timer);
  browser.stop();
  bonjour.destroy();
  process.exit(0);
});
