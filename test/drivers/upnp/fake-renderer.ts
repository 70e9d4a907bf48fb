/**
 * A fake UPnP MediaRenderer on loopback (description, SCPD, GENA SUBSCRIBE, the SOAP actions
 * the driver's bookkeeping needs). Real protocol behaviour is tested against gmediarender.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const UDN = 'uuid:fake-renderer-1';

export class FakeRenderer {
  private server?: Server;
  port = 0;
  subscribes = 0;
  volumeSets: number[] = [];
  volume = 40;

  get location(): string {
    return `http://127.0.0.1:${this.port}/desc.xml`;
  }

  async start(): Promise<void> {
    const server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((r) => server.listen(this.port, '127.0.0.1', () => r()));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    await new Promise<void>((r) => {
      s.close(() => r());
      s.closeAllConnections();
    });
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const send = (status: number, text = '', headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'Content-Type': 'text/xml', Connection: 'close', ...headers });
        res.end(text);
      };
      if (req.method === 'GET' && req.url === '/desc.xml') return send(200, DESCRIPTION);
      if (req.method === 'GET' && req.url === '/rc.xml') return send(200, SCPD);
      if (req.method === 'SUBSCRIBE') {
        this.subscribes++;
        return send(200, '', { SID: req.headers.sid ? String(req.headers.sid) : `uuid:sid-${this.subscribes}`, TIMEOUT: 'Second-300' });
      }
      if (req.method === 'UNSUBSCRIBE') return send(200);
      const action = /#(\w+)"?$/.exec(String(req.headers.soapaction))?.[1] ?? '';
      const reply = (inner = '') =>
        send(
          200,
          `<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><u:${action}Response xmlns:u="x">${inner}</u:${action}Response></s:Body></s:Envelope>`,
        );
      if (action === 'GetVolume') return reply(`<CurrentVolume>${this.volume}</CurrentVolume>`);
      if (action === 'SetVolume') {
        this.volume = Number(/<DesiredVolume>(\d+)</.exec(body)?.[1]);
        this.volumeSets.push(this.volume);
        return reply();
      }
      if (action === 'GetTransportInfo')
        return reply('<CurrentTransportState>STOPPED</CurrentTransportState><CurrentTransportStatus>OK</CurrentTransportStatus>');
      return reply();
    });
  }
}

const DESCRIPTION = `<?xml version="1.0"?><root xmlns="urn:schemas-upnp-org:device-1-0"><device>
<deviceType>urn:schemas-upnp-org:device:MediaRenderer:1</deviceType><friendlyName>Fake &amp; Co</friendlyName>
<modelName>FakeRender</modelName><modelNumber>3.1</modelNumber><UDN>${UDN}</UDN><serviceList>
<service><serviceType>urn:schemas-upnp-org:service:AVTransport:1</serviceType><controlURL>/avt</controlURL><eventSubURL>/avt-ev</eventSubURL><SCPDURL>/avt.xml</SCPDURL></service>
<service><serviceType>urn:schemas-upnp-org:service:RenderingControl:1</serviceType><controlURL>/rc</controlURL><eventSubURL>/rc-ev</eventSubURL><SCPDURL>/rc.xml</SCPDURL></service>
</serviceList></device></root>`;
const SCPD = `<scpd><serviceStateTable><stateVariable><name>Volume</name><dataType>ui2</dataType><allowedValueRange><minimum>0</minimum><maximum>100</maximum></allowedValueRange></stateVariable></serviceStateTable></scpd>`;
