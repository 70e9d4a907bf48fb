import { httpRequest, NetworkError } from './http-client';
import { soapActionElement, soapDocument } from './soap';
import { at, childNames, parseXml, text } from './xml';

/**
 * SOAP as a control point speaks it (the upnp driver, to the renderers it controls): the
 * request envelope (written as soap.ts writes the device side's answers) and the answer read
 * under the one hardened XML policy; a UPnP fault becomes a SoapFault with its code.
 */

/** A service's control endpoint, as the device description lists it. */
export interface ControlTarget {
  controlUrl: string;
  /** e.g. urn:schemas-upnp-org:service:AVTransport:1 */
  serviceType: string;
}

export interface SoapOptions {
  timeoutMs: number;
  localAddress?: string;
}

/** The renderer answered, but refused the action (a UPnP error, e.g. 701 Transition not available). */
export class SoapFault extends Error {
  constructor(
    readonly action: string,
    readonly httpStatus: number,
    readonly upnpCode?: number,
    readonly upnpDescription?: string,
  ) {
    super(
      `${action} failed: ${upnpCode !== undefined ? `UPnP error ${upnpCode}${upnpDescription ? ` (${upnpDescription})` : ''}` : `HTTP ${httpStatus}`}`,
    );
    this.name = 'SoapFault';
  }
}

/** Arguments in the order the service description declares them: some renderers insist on it. */
export type SoapArgs = Record<string, string | number>;

export function soapEnvelope(serviceType: string, action: string, args: SoapArgs): string {
  return soapDocument(soapActionElement(serviceType, action, args));
}

/** Parses an action response into its out arguments, or throws the SoapFault it carries. */
export function parseSoapResponse(action: string, status: number, body: string): Record<string, string> {
  let doc;
  try {
    doc = parseXml(body);
  } catch {
    if (status >= 200 && status < 300) throw new SoapFault(action, status, undefined, 'answer is not XML');
    throw new SoapFault(action, status);
  }
  const soapBody = at(doc, 'Envelope', 'Body');
  const fault = at(soapBody, 'Fault');
  if (fault !== undefined || status < 200 || status >= 300) {
    const err = at(fault, 'detail', 'UPnPError');
    const code = Number.parseInt(text(at(err, 'errorCode')), 10);
    throw new SoapFault(action, status, Number.isFinite(code) ? code : undefined, text(at(err, 'errorDescription')) || undefined);
  }
  const response = at(soapBody, `${action}Response`);
  const out: Record<string, string> = {};
  for (const name of childNames(response)) out[name] = text(at(response, name));
  return out;
}

/** Invokes one action; NetworkError when the renderer does not answer, SoapFault when it refuses. */
export async function soapCall(target: ControlTarget, action: string, args: SoapArgs, options: SoapOptions): Promise<Record<string, string>> {
  const res = await httpRequest(target.controlUrl, {
    method: 'POST',
    headers: {
      'Content-Type': 'text/xml; charset="utf-8"',
      SOAPACTION: `"${target.serviceType}#${action}"`,
      'User-Agent': 'SpeakerHub UPnP/1.0',
    },
    body: soapEnvelope(target.serviceType, action, args),
    timeoutMs: options.timeoutMs,
    localAddress: options.localAddress,
  });
  return parseSoapResponse(action, res.status, res.body);
}

export { NetworkError };
