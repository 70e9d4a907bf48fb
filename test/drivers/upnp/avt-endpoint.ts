/**
 * A loopback AVTransport control endpoint for the driver's unit tests, and a RendererControl
 * aimed at it: every SOAP action goes to `answer`, which gives the response's fields or a fault.
 * Real protocol behaviour is tested against gmediarender.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UpnpConfigSchema } from '../../../src/drivers/upnp/config';
import { RendererControl } from '../../../src/drivers/upnp/renderer-control';
import { createLogger } from '../../../src/logger';
import type { Clock } from '../../../src/core/clock';
import type { RendererDescription } from '../../../src/protocols/upnp/description-parse';
import { soapFault, soapResponse, type UpnpError } from '../../../src/protocols/upnp/soap';

const AVT = 'urn:schemas-upnp-org:service:AVTransport:1';

export interface AvtAnswer {
  fields?: Record<string, string>;
  fault?: UpnpError;
}

export interface AvtEndpoint {
  control: RendererControl;
  close: () => Promise<void>;
}

export async function avtEndpoint(answer: (action: string) => AvtAnswer | Promise<AvtAnswer>, clock?: Clock): Promise<AvtEndpoint> {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', async () => {
      const action = /#(\w+)"?$/.exec(String(req.headers.soapaction))?.[1] ?? '';
      const { fields = {}, fault } = await answer(action);
      res.writeHead(fault ? 500 : 200, { 'Content-Type': 'text/xml' });
      res.end(fault ? soapFault(fault) : soapResponse(AVT, action, fields));
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
    ...(clock ? { clock } : {}),
  });
  return { control, close: () => new Promise((r) => server.close(() => r())) };
}
