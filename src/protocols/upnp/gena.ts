import { attr, childNames, children, escapeXml, parseXml, text, type XmlValue } from './xml';

/**
 * GENA, UPnP eventing (UDA 1.0 §4): the messages both sides share. The hub subscribes to the
 * renderers it controls (gena-subscriber.ts, the upnp driver) and takes subscriptions to the
 * devices it publishes (gena-publisher.ts, the DLNA renderers and MediaServer): the same
 * headers, the same property sets, read under the one hardened XML policy.
 */

/** NT of a SUBSCRIBE and of a NOTIFY. */
export const GENA_NT = 'upnp:event';
/** NTS of an event NOTIFY. */
export const GENA_NTS = 'upnp:propchange';

/** A header's (first) value. */
export function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** TIMEOUT as a header value. */
export function timeoutHeader(seconds: number): string {
  return `Second-${seconds}`;
}

/** Seconds of a TIMEOUT header ("Second-1800"); undefined for "infinite", a missing or malformed one. */
export function timeoutSeconds(header: string | undefined): number | undefined {
  const m = /^\s*Second-(\d{1,9})\s*$/i.exec(header ?? '');
  return m ? Number(m[1]) : undefined;
}

/** Seconds the device granted in its TIMEOUT answer; the requested value when it names none. */
export function grantedSeconds(header: string | undefined, requested: number): number {
  // "infinite" (UDA 1.0) still gets renewed now and then, in case the renderer restarted.
  return timeoutSeconds(header) ?? requested;
}

/** `<e:property>` elements, one per variable, values escaped. */
export function propertySetOf(values: Record<string, string>): string {
  return Object.entries(values)
    .map(([k, v]) => `<e:property><${k}>${escapeXml(v)}</${k}></e:property>`)
    .join('');
}

/** A NOTIFY body around `<e:property>` elements. */
export function propertySetDocument(properties: string): string {
  return `<?xml version="1.0" encoding="utf-8"?>\n<e:propertyset xmlns:e="urn:schemas-upnp-org:event-1-0">${properties}</e:propertyset>`;
}

/** The state variables of a NOTIFY body (<e:propertyset><e:property><Name>value</Name>…). */
export function parsePropertySet(xml: string): Record<string, string> {
  const doc = parseXml(xml);
  const out: Record<string, string> = {};
  for (const set of children(doc, 'propertyset')) {
    for (const prop of children(set, 'property')) {
      for (const name of childNames(prop)) out[name] = text(children(prop, name)[0]);
    }
  }
  return out;
}

/** The variables of InstanceID 0 in a LastChange document; for RenderingControl, channel Master (or none) wins. */
export function parseLastChange(xml: string): Record<string, string> {
  const doc = parseXml(xml);
  const instances = children(children(doc, 'Event')[0], 'InstanceID');
  const instance = instances.find((i) => (attr(i, 'val') ?? '0') === '0');
  const out: Record<string, string> = {};
  for (const name of childNames(instance)) {
    const values = children(instance, name) as XmlValue[];
    const pick = values.find((v) => (attr(v, 'channel') ?? 'Master') === 'Master');
    const val = attr(pick, 'val');
    if (val !== undefined) out[name] = val;
  }
  return out;
}
