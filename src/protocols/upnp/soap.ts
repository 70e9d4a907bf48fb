import { child, escapeXml, isElement, parseControlPointXml, text, XmlError } from './xml';

export { MAX_CONTROL_POINT_XML_ITEMS } from './xml';

/**
 * SOAP 1.1 as UPnP uses it: one action per POST, arguments as child elements, answers as
 * `<u:ActionResponse>`, failures as a SOAP fault carrying a UPnPError code. This file is the
 * device side (the DLNA renderers and MediaServer) and the envelope both sides write;
 * soap-client.ts is the control point side (the upnp driver).
 */

/** UPnP error codes (UDA 1.0 and the AV services). */
export const UPNP_ERRORS = {
  InvalidAction: [401, 'Invalid Action'],
  InvalidArgs: [402, 'Invalid Args'],
  ActionFailed: [501, 'Action Failed'],
  ArgumentValueInvalid: [600, 'Argument Value Invalid'],
  ArgumentValueOutOfRange: [601, 'Argument Value Out of Range'],
  TransitionNotAvailable: [701, 'Transition not available'],
  NoContents: [702, 'No contents'],
  SeekModeNotSupported: [710, 'Seek mode not supported'],
  IllegalSeekTarget: [711, 'Illegal seek target'],
  PlayModeNotSupported: [712, 'Play mode not supported'],
  IllegalMimeType: [714, 'Illegal MIME-type'],
  ResourceNotFound: [716, 'Resource not found'],
  InvalidInstanceId: [718, 'Invalid InstanceID'],
  InvalidConnectionReference: [706, 'Invalid connection reference'],
  // ContentDirectory:1 (the same numbers mean other things in AVTransport).
  NoSuchObject: [701, 'No such object'],
  UnsupportedSearchCriteria: [708, 'Unsupported or invalid search criteria'],
  UnsupportedSortCriteria: [709, 'Unsupported or invalid sort criteria'],
  NoSuchContainer: [710, 'No such container'],
  CannotProcess: [720, 'Cannot process the request'],
} as const;

export type UpnpErrorName = keyof typeof UPNP_ERRORS;

export class UpnpError extends Error {
  readonly code: number;
  constructor(
    readonly kind: UpnpErrorName,
    detail?: string,
  ) {
    super(detail ?? UPNP_ERRORS[kind][1]);
    this.code = UPNP_ERRORS[kind][0];
  }
}

export interface SoapRequest {
  serviceType: string;
  action: string;
  args: Record<string, string>;
}

/** Largest SOAP body accepted (a DIDL-Lite of a long playlist entry fits many times over). */
export const MAX_SOAP_BYTES = 64 * 1024;

/**
 * Reads the action from the SOAPACTION header and the envelope. Anything malformed is a
 * UpnpError: 401 when the action cannot be told, 402 when its arguments cannot be read.
 */
export function parseSoapRequest(body: string, soapActionHeader: string | undefined): SoapRequest {
  const header = /^"?([^"#]+)#([A-Za-z0-9_]+)"?$/.exec((soapActionHeader ?? '').trim());
  if (!header) throw new UpnpError('InvalidAction', 'missing or malformed SOAPACTION header');
  const [, serviceType, action] = header;
  let doc;
  try {
    doc = parseControlPointXml(body, MAX_SOAP_BYTES);
  } catch (e) {
    throw new UpnpError('InvalidArgs', e instanceof XmlError ? e.message : 'unreadable body');
  }
  const envelope = child(doc, 'Envelope');
  const soapBody = child(envelope, 'Body');
  if (!isElement(soapBody)) throw new UpnpError('InvalidArgs', 'no SOAP Body');
  const element = soapBody[action];
  if (element === undefined) throw new UpnpError('InvalidAction', `the body does not hold ${action}`);
  if (Array.isArray(element)) throw new UpnpError('InvalidArgs', `${action} given twice`);
  const args: Record<string, string> = {};
  if (isElement(element)) {
    for (const [name, value] of Object.entries(element)) {
      if (name.startsWith('@_') || name === '#text') continue;
      if (Array.isArray(value)) throw new UpnpError('InvalidArgs', `argument ${name} given twice`);
      args[name] = text(value);
    }
  }
  return { serviceType, action, args };
}

/** One action element (a request's `<u:Action>` or an answer's `<u:ActionResponse>`) with its arguments as child elements, escaped. */
export function soapActionElement(serviceType: string, element: string, args: Record<string, string | number>): string {
  const inner = Object.entries(args)
    .map(([k, v]) => `<${k}>${escapeXml(String(v))}</${k}>`)
    .join('');
  return `<u:${element} xmlns:u="${escapeXml(serviceType)}">${inner}</u:${element}>`;
}

export function soapResponse(serviceType: string, action: string, out: Record<string, string | number>): string {
  return soapDocument(soapActionElement(serviceType, `${action}Response`, out));
}

export function soapFault(error: UpnpError): string {
  return soapDocument(
    '<s:Fault><faultcode>s:Client</faultcode><faultstring>UPnPError</faultstring><detail>' +
      '<UPnPError xmlns="urn:schemas-upnp-org:control-1-0">' +
      `<errorCode>${error.code}</errorCode><errorDescription>${escapeXml(error.message)}</errorDescription>` +
      '</UPnPError></detail></s:Fault>',
  );
}

/** A SOAP 1.1 envelope around a body (requests, answers and faults alike). */
export function soapDocument(body: string): string {
  return (
    '<?xml version="1.0" encoding="utf-8"?>\n' +
    '<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" s:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/">' +
    `<s:Body>${body}</s:Body></s:Envelope>`
  );
}
