'use strict';
/*
 * The client's MQTT transport: the spec's publish/subscribe mode over MQTT-over-WebSocket at
 * /mqtt on the hub's own port (username = subscribe key, password = publish key). Commands go
 * on the shared channel as {"Command", "HKWHubUUID", "SessionToken", ...params, "transaction"};
 * the answer is the message with ResponseOf and the same transaction. The operation names,
 * parameters and response JSON are those of REST, so the page (api.js) runs unchanged on top of it.
 */
(function () {
  const MAX_IN_FLIGHT = 64; // bounded: a hub that stops answering cannot grow this map
  const TIMEOUT_MS = 15000;
  let bundle = null;

  /** Step log for whoever hunts a slow or lost answer (the browser test sets SPEAKERHUB_DEBUG): off by default. */
  const debug = (...what) => {
    if (window.SPEAKERHUB_DEBUG) console.debug('[mqtt]', ...what);
  };

  /** An error with the code api.js turns into plain words. */
  const coded = (code, message) => Object.assign(new Error(message), { code });

  /** mqtt.js's browser build, from this server (only loaded when this sign-in is used). */
  function loadBundle() {
    if (window.mqtt) return Promise.resolve();
    bundle ??= new Promise((resolve, reject) => {
      const s = document.createElement('script');
      s.src = '/client/mqtt.min.js';
      s.onload = () => resolve();
      s.onerror = () => {
        bundle = null;
        reject(new Error('could not load the MQTT library from the hub'));
      };
      document.head.appendChild(s);
    });
    return bundle;
  }

  /**
   * Connects and subscribes the channel. Rejects with code KeysRefused (wrong keys) or
   * HubUnreachable (no MQTT at /mqtt, or the link dropped); `accepted` is set when the hub
   * had taken the keys before the link dropped.
   */
  async function open({ subscribeKey, publishKey, channel }) {
    await loadBundle();
    const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/mqtt`;
    const prefix = `web-${Math.random().toString(36).slice(2, 10)}-`;
    const client = window.mqtt.connect(url, {
      username: subscribeKey,
      password: publishKey,
      clientId: prefix.slice(0, -1),
      clean: true,
      connectTimeout: 10000,
      reconnectPeriod: 2000,
    });
    const pending = new Map();
    const eventListeners = new Set();
    let hubUuid = null;
    let seq = 0;
    for (const ev of ['connect', 'reconnect', 'close', 'offline', 'end']) client.on(ev, () => debug(ev, `pending=${pending.size}`));
    client.on('error', (e) => debug('error', e && e.message));

    await new Promise((resolve, reject) => {
      let settled = false;
      const fail = (e) => {
        if (settled) return;
        settled = true;
        client.end(true);
        const refused = e && (e.code === 5 || e.code === 4 || /authori/i.test(e.message || ''));
        reject(
          refused
            ? coded('KeysRefused', 'the hub refused these keys')
            : coded('HubUnreachable', `cannot reach the hub over MQTT (${(e && e.message) || 'connection closed'})`),
        );
      };
      client.once('connect', () => {
        settled = true;
        client.off('error', fail);
        client.off('close', closed);
        resolve();
      });
      client.once('error', fail);
      // A server without /mqtt (MQTT off, or an external broker) just closes the socket: no 'error' comes.
      const closed = () => fail(null);
      client.once('close', closed);
    });
    try {
      await client.subscribeAsync(channel, { qos: 1 });
    } catch (e) {
      // The hub took the keys, then the link dropped (the hub stopped) before the channel was
      // subscribed: the hub is out of reach, the keys are fine. The client is ended, not left
      // reconnecting in the background with nobody holding it.
      client.end(true);
      throw Object.assign(coded('HubUnreachable', `the hub cannot be reached over MQTT (${e.message})`), { accepted: true });
    }

    // The link went down (the hub stopped, the network went): answers to what was sent will not
    // come (a clean session), so the calls fail now as unreachable instead of timing out later.
    client.on('close', () => {
      for (const p of pending.values()) {
        clearTimeout(p.timer);
        p.reject(coded('HubUnreachable', 'the hub cannot be reached over MQTT'));
      }
      pending.clear();
    });

    client.on('message', (topic, payload) => {
      if (topic !== channel) return;
      let m;
      try {
        m = JSON.parse(new TextDecoder().decode(payload));
      } catch {
        return; // not for us
      }
      if (!m || typeof m !== 'object') return;
      if ('Event' in m) {
        // The hub's events (another hub on a shared channel is not ours): the page follows them.
        if (!hubUuid || m.HKWHubUUID === hubUuid) for (const fn of eventListeners) fn(m);
        return;
      }
      if (!('ResponseOf' in m)) return; // commands
      const p = pending.get(m.transaction);
      if (!p) return; // another client's answer, or one that came after its timeout
      pending.delete(m.transaction);
      clearTimeout(p.timer);
      debug('answer', m.ResponseOf, m.transaction, `${Date.now() - p.sent} ms`);
      // The first answer to an init_session without a UUID names the hub from now on.
      if (!hubUuid && m.HKWHubUUID) hubUuid = m.HKWHubUUID;
      const body = { ...m };
      delete body.ResponseOf;
      delete body.transaction;
      p.resolve(body);
    });

    return {
      kind: 'mqtt',
      get hubUuid() {
        return hubUuid;
      },
      /** Calls fn with each event the hub says on the channel (PlaybackStateChanged, DeviceStateUpdated, …). */
      onEvent(fn) {
        eventListeners.add(fn);
      },
      /** Runs one operation; resolves with the response JSON (errors too, as over REST). */
      call(op, params) {
        // The broker is the hub: while the link is down (hub stopped, network gone) nothing is sent; mqtt.js reconnects by itself.
        if (!client.connected) return Promise.reject(coded('HubUnreachable', 'the hub cannot be reached over MQTT'));
        if (pending.size >= MAX_IN_FLIGHT) return Promise.reject(coded('Busy', 'too many requests waiting for the hub'));
        const transaction = `${prefix}${++seq}`;
        const msg = { Command: op, ...(hubUuid ? { HKWHubUUID: hubUuid } : {}), ...params, transaction };
        return new Promise((resolve, reject) => {
          const timer = setTimeout(() => {
            debug('timeout', op, transaction);
            pending.delete(transaction);
            reject(coded('HubTimeout', 'no answer from the hub over MQTT'));
          }, TIMEOUT_MS);
          pending.set(transaction, { resolve, reject, timer, sent: Date.now() });
          debug('send', op, transaction);
          client.publish(channel, JSON.stringify(msg), { qos: 1 }, (err) => {
            debug('puback', op, transaction, err ? err.message : 'ok');
            if (!err) return;
            clearTimeout(timer);
            pending.delete(transaction);
            reject(new Error(`MQTT publish failed: ${err.message}`));
          });
        });
      },
      close() {
        for (const p of pending.values()) {
          clearTimeout(p.timer);
          p.reject(new Error('disconnected'));
        }
        pending.clear();
        eventListeners.clear();
        client.end(true);
      },
    };
  }

  window.SpeakerHubMqtt = { open };
})();
