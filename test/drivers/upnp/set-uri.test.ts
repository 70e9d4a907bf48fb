/**
 * Loading a URI (RendererControl.setUri, issue 30) against renderers on loopback: one that takes
 * a new URI in any state gets no Stop; one that refuses it while playing (UPnP 701) is stopped
 * and asked again, and stopped first on every later load. That gmediarender takes the URI
 * without a Stop is checked on the real renderer in upnp.lab.test.ts.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UpnpConfigSchema } from '../../../src/drivers/upnp/config';
import { RendererControl } from '../../../src/drivers/upnp/renderer-control';
import { createLogger } from '../../../src/logger';
import type { RendererDescription } from '../../../src/protocols/upnp/description-parse';
import { soapFault, soapResponse, UpnpError } from '../../../src/protocols/upnp/soap';

const AVT = 'urn:schemas-upnp-org:service:AVTransport:1';

/** An AVTransport control endpoint that logs the actions; `locked`: SetAVTransportURI only right after a Stop. */
async function renderer(locked: boolean): Promise<{ actions: string[]; control: RendererControl; close: () => Promise<void> }> {
  const actions: string[] = [];
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const action = /#(\w+)"?$/.exec(String(req.headers.soapaction))?.[1] ?? '';
      const refuse = locked && action === 'SetAVTransportURI' && actions[actions.length - 1] !== 'Stop';
      actions.push(action);
      res.writeHead(refuse ? 500 : 200, { 'Content-Type': 'text/xml' });
      res.end(refuse ? soapFault(new UpnpError('TransitionNotAvailable')) : soapResponse(AVT, action, {}));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const description = {
    avTransport: { serviceType: AVT, controlUrl: `${base}/avt`, eventSubUrl: `${base}/evt`, scpdUrl: `${base}/scpd` },
  } as RendererDescription;
  const control = new RendererControl({
    description: () => description,
    config: UpnpConfigSchema.parse({}),
    log: createLogger({ level: 'silent' }),
    onNoAnswer: () => undefined,
  });
  return { actions, control, close: () => new Promise((r) => server.close(() => r())) };
}

test('a renderer that takes a new URI in any state: SetAVTransportURI alone', async () => {
  const r = await renderer(false);
  try {
    await r.control.setUri('http://h/a.mp3', '', () => undefined);
    await r.control.setUri('http://h/b.mp3', '', () => undefined);
    expect(r.actions).toEqual(['SetAVTransportURI', 'SetAVTransportURI']);
  } finally {
    await r.close();
  }
});

test('a renderer that refuses it while playing: Stop, then again; and Stop first from then on', async () => {
  const r = await renderer(true);
  try {
    const checks: string[] = [];
    await r.control.setUri('http://h/a.mp3', '', () => checks.push('still wanted'));
    expect(r.actions).toEqual(['SetAVTransportURI', 'Stop', 'SetAVTransportURI']);
    // The play may have been replaced while the renderer stopped: the caller is asked before the retry.
    expect(checks).toEqual(['still wanted']);
    await r.control.setUri('http://h/b.mp3', '', () => undefined);
    expect(r.actions.slice(3)).toEqual(['Stop', 'SetAVTransportURI']);
  } finally {
    await r.close();
  }
});
