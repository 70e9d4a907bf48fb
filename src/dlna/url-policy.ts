import { pointsAtHubMachine } from '../net/url-target';
import { UpnpError } from '../protocols/upnp/soap';

/**
 * What a control point may make the hub fetch (issue 32 item 6). A URI handed over by
 * SetAVTransportURI is fetched by the hub (or its speakers) later: without this, any LAN host
 * could point it at http://127.0.0.1:<port>/… and probe services that listen only on the
 * hub's machine (a blind SSRF). Loopback, link-local and the hub's own interface addresses
 * are refused with 716 Resource not found unless dlna.allowLocalUrls. The address check is
 * shared with the other token-less front ends (src/net/url-target.ts).
 */
export async function checkUrlTarget(url: string, allowLocal: boolean): Promise<void> {
  if (allowLocal || !url) return;
  // Not a URL: checkUrl refused it already (pointsAtHubMachine is false then).
  if (await pointsAtHubMachine(url)) {
    throw new UpnpError(
      'ResourceNotFound',
      'refused: the URI points at the hub’s own machine (loopback, link-local or one of its addresses); dlna.allowLocalUrls allows it',
    );
  }
}
