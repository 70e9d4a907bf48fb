'use strict';
/**
 * SSDP from inside a LAN namespace of the DLNA tests, printing JSON lines:
 *   node ssdp.js search <local address> <ST> [repeat]   sends M-SEARCH (MX 1), prints every answer
 *       {"evt":"answer","st":…,"usn":…,"location":…,"from":…}; {"evt":"sent"} after each search
 *   node ssdp.js flood <local address> <ST> <count>   sends <count> M-SEARCHes at once (MX 1), counts
 *       the answers for 4 s: {"evt":"flooded","sent":…,"answers":…}
 *   node ssdp.js listen <local address>   joins the group, prints every NOTIFY
 *       {"evt":"notify","nt":…,"nts":…,"usn":…,"location":…,"from":…}; {"evt":"ready"} first
 */
const dgram = require('node:dgram');

const [mode, address, st, repeat] = process.argv.slice(2);
const emit = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);

function headers(text) {
  const h = {};
  for (const line of text.split(/\r?\n/).slice(1)) {
    const i = line.indexOf(':');
    if (i > 0) h[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  return h;
}

if (mode === 'search') {
  const s = dgram.createSocket('udp4');
  s.on('message', (m, r) => {
    const h = headers(m.toString());
    emit({ evt: 'answer', st: h.st, usn: h.usn, location: h.location, cache: h['cache-control'], from: r.address });
  });
  s.bind(0, address, () => {
    s.setMulticastInterface(address);
    const send = () => {
      const msg = `M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nMAN: "ssdp:discover"\r\nMX: 1\r\nST: ${st}\r\n\r\n`;
      s.send(msg, 1900, '239.255.255.250', () => emit({ evt: 'sent' }));
    };
    send();
    for (let i = 1; i < Number(repeat || 1); i++) setTimeout(send, i * 1500);
  });
} else if (mode === 'flood') {
  const s = dgram.createSocket('udp4');
  let answers = 0;
  s.on('message', () => answers++);
  s.bind(0, address, () => {
    s.setMulticastInterface(address);
    const msg = Buffer.from(`M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nMAN: "ssdp:discover"\r\nMX: 1\r\nST: ${st}\r\n\r\n`);
    const count = Number(repeat);
    let sent = 0;
    for (let i = 0; i < count; i++) s.send(msg, 1900, '239.255.255.250', () => sent++);
    setTimeout(() => {
      emit({ evt: 'flooded', sent, answers });
      s.close();
    }, 4000);
  });
} else if (mode === 'listen') {
  const s = dgram.createSocket({ type: 'udp4', reuseAddr: true });
  s.on('message', (m, r) => {
    const text = m.toString();
    if (!text.startsWith('NOTIFY')) return;
    const h = headers(text);
    emit({ evt: 'notify', nt: h.nt, nts: h.nts, usn: h.usn, location: h.location, from: r.address });
  });
  s.bind(1900, () => {
    s.addMembership('239.255.255.250', address);
    emit({ evt: 'ready' });
  });
}
