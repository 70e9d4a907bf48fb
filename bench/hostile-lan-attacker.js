'use strict';
/**
 * The hostile LAN host of bench/hostile-lan.js, run inside its own network namespace:
 *   node hostile-lan-attacker.js <mode> <own address> <target json> <seconds>
 * Modes (issue 32): xml (32 SOAP bodies of 64 KB "<a<a<a…" at a time, ten rounds a second), gena
 * (SUBSCRIBE to every service of every renderer, renewing what it got), ssdp (ssdp:all
 * M-SEARCH flood), slimproto (HELOs with random MACs that answer, idle HELOs, a reused MAC).
 * Bounded in count and time: it stops by itself after <seconds> and prints one JSON line of
 * what it did: {"mode":…,"sent":…,"answers":…,"refused":…}.
 */
const dgram = require('node:dgram');
const http = require('node:http');
const net = require('node:net');

const [mode, self, targetJson, secondsArg] = process.argv.slice(2);
const target = JSON.parse(targetJson);
const until = Date.now() + Number(secondsArg) * 1000;
const stats = { mode, sent: 0, answers: 0, refused: 0 };
const live = () => Date.now() < until;

function request(method, url, headers, body) {
  return new Promise((resolve) => {
    const u = new URL(url);
    const req = http.request(
      { host: u.hostname, port: u.port, path: u.pathname, method, headers, localAddress: self, agent: false, timeout: 5000 },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode, headers: res.headers }));
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve({ status: 0, headers: {} }));
    req.end(body);
  });
}

async function xml() {
  const body = '<a'.repeat(32 * 1024 - 8);
  const control = target.location.replace(/description\.xml$/, 'AVTransport/control');
  const headers = {
    'Content-Type': 'text/xml',
    SOAPACTION: '"urn:schemas-upnp-org:service:AVTransport:1#Play"',
    'Content-Length': Buffer.byteLength(body),
  };
  while (live()) {
    const answers = await Promise.all(Array.from({ length: 32 }, () => request('POST', control, headers, body)));
    stats.sent += 32;
    for (const a of answers) if (a.status === 500) stats.answers++;
    await pause(100); // ~300 bodies (20 MB) a second: the 32 bodies, ten times a second
  }
}

async function gena() {
  const server = http.createServer((req, res) => {
    req.resume();
    res.end();
  });
  await new Promise((r) => server.listen(0, self, r));
  const cb = `<http://${self}:${server.address().port}/cb>`;
  const sids = [];
  while (live()) {
    for (const location of target.locations) {
      for (const service of ['AVTransport', 'RenderingControl', 'ConnectionManager']) {
        const ev = location.replace(/description\.xml$/, `${service}/event`);
        const r = await request('SUBSCRIBE', ev, { CALLBACK: cb, NT: 'upnp:event', TIMEOUT: 'Second-300' });
        stats.sent++;
        if (r.status === 200) sids.push([ev, r.headers.sid]);
        else stats.refused++;
      }
    }
    for (const [ev, sid] of sids) await request('SUBSCRIBE', ev, { SID: sid, TIMEOUT: 'Second-300' });
    stats.answers = sids.length;
  }
  server.close();
}

async function ssdp() {
  const s = dgram.createSocket('udp4');
  s.on('message', () => stats.answers++);
  await new Promise((r) => s.bind(0, self, r));
  s.setMulticastInterface(self);
  const msg = Buffer.from('M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nMAN: "ssdp:discover"\r\nMX: 1\r\nST: ssdp:all\r\n\r\n');
  while (live()) {
    for (let i = 0; i < 100; i++) s.send(msg, 1900, '239.255.255.250');
    stats.sent += 100;
    await new Promise((r) => setTimeout(r, 50)); // 2,000 searches a second
  }
  await new Promise((r) => setTimeout(r, 1500));
  s.close();
}

function frame(opcode, body) {
  const head = Buffer.alloc(8);
  head.write(opcode, 0, 'latin1');
  head.writeUInt32BE(body.length, 4);
  return Buffer.concat([head, body]);
}
function helo(mac) {
  const b = Buffer.alloc(36);
  b[0] = 12;
  Buffer.from(mac).copy(b, 2);
  return frame('HELO', Buffer.concat([b, Buffer.from('Model=squeezelite,pcm')]));
}
const stmt = (() => {
  const b = Buffer.alloc(53);
  b.write('STMt', 0, 'latin1');
  return frame('STAT', b);
})();

/**
 * Each SlimProto loop reconnects 10 ms after its last connection closed (~100 a second a loop, ~900 in
 * all): the attacks (300 MACs, 62 idle HELOs, a MAC fought over 147 times in 20 s),
 * many times over, without turning into a bare SYN flood, which no application-level server can
 * make free (that is a firewall's job).
 */
const pause = (ms = 10) => new Promise((r) => setTimeout(r, ms));

async function slimproto() {
  let n = 0;
  const sockets = new Set();
  const one = (answer, mac) =>
    new Promise((resolve) => {
      const sock = net.connect({ host: target.host, port: target.port, localAddress: self });
      sockets.add(sock);
      stats.sent++;
      sock.on('error', () => undefined);
      sock.once('connect', () => sock.write(helo(mac)));
      sock.on('data', () => {
        if (answer && sock.writable) sock.write(stmt);
      });
      sock.once('close', () => {
        sockets.delete(sock);
        resolve();
      });
      // Answering clients leave after a second (their entry stays, offline); idle ones wait to be dropped.
      if (answer) setTimeout(() => sock.destroy(), 1000);
    });
  const loops = [
    // Random MACs that answer, 8 at a time, as fast as the hub lets them in.
    ...Array.from({ length: 8 }, () => async () => {
      while (live()) {
        await one(true, [2, 0xee, (n >> 16) & 255, (n >> 8) & 255, n++ & 255, 0x42]);
        await pause();
      }
    }),
    // Idle HELOs, 62 at a time.
    async () => {
      while (live()) await Promise.all(Array.from({ length: 62 }, () => one(false, [2, 0xdd, 0, 0, (n >> 8) & 255, n++ & 255])));
    },
    // The real player's MAC.
    async () => {
      while (live()) {
        await one(true, target.realMac);
        await pause();
      }
    },
  ];
  const only = process.env.SLIM_LOOPS; // for finding what costs: random | idle | mac
  const pick = { random: loops.slice(0, 8), idle: [loops[8]], mac: [loops[9]] }[only] ?? loops;
  await Promise.all(pick.map((l) => l()));
  for (const s of sockets) s.destroy();
}

const modes = { xml, gena, ssdp, slimproto };
modes[mode]()
  .then(() => {
    process.stdout.write(`${JSON.stringify(stats)}\n`);
    process.exit(0);
  })
  .catch((e) => {
    process.stdout.write(`${JSON.stringify({ ...stats, error: String(e && e.message) })}\n`);
    process.exit(1);
  });
