/**
 * SOAP for the published devices lives in src/protocols/upnp/soap.ts. This re-export is only
 * for http-server.ts, whose imports another change edits at the same time: the merge can point
 * it at src/protocols/upnp/soap directly and drop this file.
 */
export { MAX_SOAP_BYTES } from '../protocols/upnp/soap';
