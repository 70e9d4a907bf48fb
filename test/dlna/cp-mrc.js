'use strict';
/**
 * A control point no one here wrote: the npm package upnp-mediarenderer-client, run inside a
 * LAN namespace of the DLNA tests (its event server listens on the namespace's only address).
 * Usage: node cp-mrc.js <description URL>. Reads JSON commands on stdin, one a line:
 *   {"id":1,"cmd":"load","url":…,"options":{…}} | play | pause | stop | getVolume | setVolume(volume)
 *   | getTransportInfo | getPosition | getSupportedProtocols | callAction(service, action, params)
 *   | subscribe(service) — events then arrive as {"evt":"event","service":…,"e":{…}}
 * and answers {"evt":"result","id":…,"ok":true,"value":…} or {"ok":false,"error":…,"code":…}.
 */
const { createInterface } = require('node:readline');
const MediaRendererClient = require('upnp-mediarenderer-client');

const emit = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);
const client = new MediaRendererClient(process.argv[2]);
client.on('error', (e) => emit({ evt: 'error', error: String(e && e.message) }));

function run(c, done) {
  switch (c.cmd) {
    case 'load':
      return client.load(c.url, c.options || {}, (err) => done(err));
    case 'play':
    case 'pause':
    case 'stop':
      return client[c.cmd]((err, v) => done(err, v));
    case 'getVolume':
    case 'getTransportInfo':
    case 'getPosition':
    case 'getSupportedProtocols':
      return client[c.cmd]((err, v) => done(err, v));
    case 'setVolume':
      return client.setVolume(c.volume, (err) => done(err));
    case 'callAction':
      return client.callAction(c.service, c.action, c.params || {}, (err, v) => done(err, v));
    case 'subscribe':
      // No completion callback: SUBSCRIBE failures arrive as 'error' events.
      client.subscribe(c.service, (e) => emit({ evt: 'event', service: c.service, e }));
      return done();
    default:
      return done(new Error(`unknown command ${c.cmd}`));
  }
}

createInterface({ input: process.stdin }).on('line', (line) => {
  let c;
  try {
    c = JSON.parse(line);
  } catch {
    return;
  }
  run(c, (err, value) => {
    if (err) emit({ evt: 'result', id: c.id, ok: false, error: String(err.message), code: err.code, upnpCode: err.errorCode });
    else emit({ evt: 'result', id: c.id, ok: true, value });
  });
});
emit({ evt: 'ready' });
