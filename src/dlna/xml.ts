import { parseXml as parseBounded, type XmlElement } from '../protocols/upnp/xml';

/**
 * XML for the renderers: the hub's one hardened UPnP XML policy (src/protocols/upnp/xml.ts)
 * — bounded, no DOCTYPE, no entity expansion, nesting measured in one linear pass.
 */
export { attr, child, decodeEntities, escapeXml, isElement, text, XmlError } from '../protocols/upnp/xml';
export type { XmlElement, XmlValue } from '../protocols/upnp/xml';

/**
 * Elements plus attributes a control point's document may hold: a SOAP request has a dozen,
 * a DIDL-Lite item a few dozen. The bound caps the parser's CPU per request (issue 32 item 5).
 */
export const MAX_CONTROL_POINT_XML_ITEMS = 1024;

/** Parses a control point's document (SOAP body, DIDL-Lite) within maxChars. */
export function parseXml(text: string, maxChars: number): XmlElement {
  return parseBounded(text, { maxChars, maxItems: MAX_CONTROL_POINT_XML_ITEMS });
}
