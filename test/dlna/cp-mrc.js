'use strict';
/**
 * A control point no one here wrote: the npm package upnp-mediarenderer-client, run inside a
 * LAN namespace of the DLNA tests (its event server listens on the namespace's only address).
 * Usage: node cp-mrc.js <description URL>. Reads JSON commands on stdin, one a line:
 *   {"id":1,"cmd":"load","url":…,"options":{…}} | play | pause | stop | getVolume | setVolume(volume)
 *   | getTransportInfo | getPosition | getSupportedProtocols | callAction(service, action, params)
 *   | subscribe(service) — events then arrive as {"evt":"event","service":…,"e":{…}}
 *   | haPlay(url, title) — Home Assistant's dlna_dmr play_media, replayed (after subscribe AVTransport):
 *     Stop if the evented CurrentTransportActions allow it, SetAVTransportURI with DIDL-Lite,
 *     then, only if the evented state is not PLAYING, a wait (5 s at most, polling
 *     GetCurrentTransportActions) until Play is allowed, and Play; answers which it sent
 *   | haPause | haResume | haStop — media_pause / media_play / media_stop: Pause, Play or Stop,
 *     each sent only when the evented actions allow it (async_upnp_client's can_pause …)
 *   | haFeatures — the entity's transport features as HA derives them now
 * AVTransport events carry "features": the entity's transport features after that event
 * (async_upnp_client: an action counts when the evented CurrentTransportActions list it, or
 * when that list is empty; seek also needs REL_TIME among A_ARG_TYPE_SeekMode's values, which
 * the hub's SCPD lists, so it is taken as given here).
 * and answers {"evt":"result","id":…,"ok":true,"value":…} or {"ok":false,"error":…,"code":…}.
 */
const { createInterface } = require('node:readline');
const MediaRendererClient = require('upnp-mediarenderer-client');

const emit = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);
const client = new MediaRendererClient(process.argv[2]);
/** The AVTransport state as the events said it last (what HA acts on, never the answers). */
let evented = 'NO_MEDIA_PRESENT';
/** CurrentTransportActions as the events (or a poll) said it last. */
let actions = '';
const can = (action) => {
  const list = actions
    .split(',')
    .map((a) => a.trim().toLowerCase())
    .filter(Boolean);
  return list.length === 0 || list.includes(action);
};
/** HA's MediaPlayerEntityFeature flags that come from the transport actions (the rest come from the SCPD and never change). */
const features = () => ['play', 'pause', 'stop', 'previous', 'next', 'seek'].filter(can).join(',');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const call = (action, params) =>
  new Promise((resolve, reject) => client.callAction('AVTransport', action, { InstanceID: 0, ...params }, (e, v) => (e ? reject(e) : resolve(v))));
const didl = (url, title) =>
  '<DIDL-Lite xmlns="urn:schemas-upnp-org:metadata-1-0/DIDL-Lite/" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:upnp="urn:schemas-upnp-org:metadata-1-0/upnp/">' +
  `<item id="0" parentID="-1" restricted="1"><dc:title>${title}</dc:title><upnp:class>object.item.audioItem.musicTrack</upnp:class>` +
  `<res protocolInfo="http-get:*:audio/wav:*">${url.replace(/&/g, '&amp;')}</res></item></DIDL-Lite>`;

async function haPlay(url, title) {
  const sent = [];
  const t0 = Date.now();
  const ms = {};
  if (can('stop')) {
    await call('Stop', {});
    sent.push('Stop');
    ms.Stop = Date.now() - t0;
  }
  await call('SetAVTransportURI', { CurrentURI: url, CurrentURIMetaData: didl(url, title) });
  sent.push('SetAVTransportURI');
  ms.SetAVTransportURI = Date.now() - t0;
  const seen = evented;
  if (seen !== 'PLAYING') {
    // async_wait_for_can_play: every 0.25 s, polling the actions, for 5 s at most.
    for (const end = Date.now() + 5000; !can('play') && Date.now() <= end;) {
      await sleep(250);
      if (!can('play')) actions = (await call('GetCurrentTransportActions', {})).Actions || '';
    }
    if (!can('play')) return { sent, seen, ms };
    await call('Play', { Speed: 1 });
    sent.push('Play');
    ms.Play = Date.now() - t0;
  }
  return { sent, seen, ms };
}
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
      client.subscribe(c.service, (e) => {
        if (c.service !== 'AVTransport') return emit({ evt: 'event', service: c.service, e });
        if (e && typeof e.TransportState === 'string') evented = e.TransportState;
        if (e && typeof e.CurrentTransportActions === 'string') actions = e.CurrentTransportActions;
        emit({ evt: 'event', service: c.service, e, features: features() });
      });
      return done();
    case 'haPause':
    case 'haResume':
    case 'haStop': {
      const action = { haPause: 'Pause', haResume: 'Play', haStop: 'Stop' }[c.cmd];
      if (!can(action.toLowerCase())) return done(null, { sent: [] });
      return call(action, action === 'Play' ? { Speed: 1 } : {}).then(
        () => done(null, { sent: [action] }),
        (e) => done(e),
      );
    }
    case 'haFeatures':
      return done(null, features());
    case 'haPlay':
      return haPlay(c.url, c.title || 'Track').then(
        (v) => done(null, v),
        (e) => done(e),
      );
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
