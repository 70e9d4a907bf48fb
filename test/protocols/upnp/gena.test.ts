/** GENA (src/protocols/upnp/gena*.ts): the payloads and headers both sides share; the subscriber's callback server and subscription against fake peers on loopback. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock } from '../../../src/core/clock';
import { createLogger } from '../../../src/logger';
import {
  grantedSeconds,
  parseLastChange,
  parsePropertySet,
  propertySetDocument,
  propertySetOf,
  timeoutSeconds,
} from '../../../src/protocols/upnp/gena';
import { GenaServer, GenaSubscription } from '../../../src/protocols/upnp/gena-subscriber';
import { httpRequest } from '../../../src/protocols/upnp/http-client';

const logger = createLogger({ level: 'silent' });

describe('GENA payloads', () => {
  // A real gmediarender NOTIFY body (shortened).
  const notify = `<e:propertyset xmlns:e="urn:schemas-upnp-org:event-1-0"><e:property><LastChange>&lt;Event xmlns="urn:schemas-upnp-org:metadata-1-0/AVT/"&gt;
    &lt;InstanceID val="0"&gt;&lt;TransportState val="PLAYING"&gt;&lt;/TransportState&gt;&lt;AVTransportURI val="http://h/a?x=1&amp;amp;y=2"&gt;&lt;/AVTransportURI&gt;&lt;/InstanceID&gt;&lt;/Event&gt;</LastChange></e:property></e:propertyset>`;

  test('LastChange is XML inside XML: TransportState and URIs come out unescaped', () => {
    const props = parsePropertySet(notify);
    expect(parseLastChange(props.LastChange)).toEqual({ TransportState: 'PLAYING', AVTransportURI: 'http://h/a?x=1&y=2' });
  });

  test('RenderingControl: the Master channel wins', () => {
    const lc = `<Event xmlns="urn:schemas-upnp-org:metadata-1-0/RCS/"><InstanceID val="0"><Volume val="12" channel="LF"/><Volume val="37" channel="Master"/><Mute val="0" channel="Master"/></InstanceID></Event>`;
    expect(parseLastChange(lc)).toEqual({ Volume: '37', Mute: '0' });
  });

  test('TIMEOUT header', () => {
    expect(grantedSeconds('Second-1800', 300)).toBe(1800);
    expect(grantedSeconds('infinite', 300)).toBe(300);
    expect(grantedSeconds(undefined, 300)).toBe(300);
    expect(timeoutSeconds(' second-60 ')).toBe(60);
    expect(timeoutSeconds('Second-1234567890')).toBeUndefined();
  });

  test('what the publisher writes, the subscriber reads', () => {
    expect(parsePropertySet(propertySetDocument(propertySetOf({ LastChange: '<Event a="1&2"/>', Volume: '7' })))).toEqual({
      LastChange: '<Event a="1&2"/>',
      Volume: '7',
    });
  });
});

describe('GENA on loopback', () => {
  let gena: GenaServer;
  beforeEach(async () => {
    gena = new GenaServer({ address: '127.0.0.1', port: 0, logger });
    await gena.start();
  });
  afterEach(async () => {
    await gena.stop();
  });

  const notify = (path: string, body: string, sid = 'uuid:s') =>
    httpRequest(`http://127.0.0.1:${gena.port}${path}`, {
      method: 'NOTIFY',
      headers: { NT: 'upnp:event', NTS: 'upnp:propchange', SID: sid, SEQ: '0', 'Content-Type': 'text/xml' },
      body,
      timeoutMs: 2000,
    });

  test('every NOTIFY gets 200: routed, unknown path, malformed body', async () => {
    const seen: Record<string, string>[] = [];
    const { path } = gena.route((_sid, _seq, p) => seen.push(p));
    expect(
      (await notify(path, '<e:propertyset xmlns:e="urn:schemas-upnp-org:event-1-0"><e:property><Volume>5</Volume></e:property></e:propertyset>'))
        .status,
    ).toBe(200);
    expect((await notify('/gena/unknown', '<x/>')).status).toBe(200);
    expect((await notify(path, 'not xml <<<')).status).toBe(200);
    expect(seen).toEqual([{ Volume: '5' }]);
    expect((await httpRequest(`http://127.0.0.1:${gena.port}${path}`, { timeoutMs: 2000 })).status).toBe(405);
  });

  test('a subscription renews, resubscribes on 412 (renderer restarted), and reports a vanished renderer', async () => {
    let sids = 0;
    const known = new Set<string>();
    const requests: string[] = [];
    const renderer: Server = createServer((req, res) => {
      requests.push(`${req.method} ${req.headers.sid ? 'renew' : 'new'}`);
      if (req.method === 'SUBSCRIBE' && !req.headers.sid) {
        const sid = `uuid:sid-${++sids}`;
        known.add(sid);
        res.writeHead(200, { SID: sid, TIMEOUT: 'Second-300' });
      } else if (req.method === 'SUBSCRIBE') {
        res.writeHead(known.has(String(req.headers.sid)) ? 200 : 412, { SID: String(req.headers.sid), TIMEOUT: 'Second-300' });
      } else {
        res.writeHead(200);
      }
      res.end();
    });
    await new Promise<void>((r) => renderer.listen(0, '127.0.0.1', () => r()));
    const port = (renderer.address() as AddressInfo).port;
    const lost: Error[] = [];
    const sub = new GenaSubscription({
      server: gena,
      eventSubUrl: `http://127.0.0.1:${port}/event`,
      callbackHost: '127.0.0.1',
      timeoutSeconds: 300,
      requestTimeoutMs: 1000,
      clock: systemClock,
      logger,
      onEvent: () => undefined,
      onLost: (e) => lost.push(e),
    });
    try {
      await sub.subscribe();
      expect(sub.id).toBe('uuid:sid-1');
      await sub.renew();
      expect(sub.id).toBe('uuid:sid-1');
      known.clear(); // the renderer restarts and forgets every subscription
      await sub.renew();
      expect(sub.id).toBe('uuid:sid-2');
      expect(requests).toEqual(['SUBSCRIBE new', 'SUBSCRIBE renew', 'SUBSCRIBE renew', 'SUBSCRIBE new']);
      await new Promise<void>((r) => renderer.close(() => r()));
      renderer.closeAllConnections();
      await sub.renew();
      expect(lost).toHaveLength(1);
    } finally {
      await sub.close(false);
      renderer.close();
    }
  });
});
