import { parseXml as parseBounded, type XmlElement } from '../protocols/upnp/xml';

/**
 * XML for the renderers: the hub's one hardened UPnP XML policy (src/protocols/upnp/xml.ts)
 * — bounded, no DOCTYPE, no entity expansion, nesting measured in one linear pass.
 */
export { attr, child, decodeEntities, escapeXml, isElement, text, XmlError } from '../protocols/upnp/xml';
export type { XmlElement, XmlValue } from '../protocols/upnp/xml';

import { MAX_CONTROL_POINT_XML_ITEMS } from '../protocols/upnp/soap';
export { MAX_CONTROL_POINT_XML_ITEMS };

/** Parses a control point's document (SOAP body, DIDL-Lite) within maxChars. */
export function parseXml(text: string, maxChars: number): XmlElement {
  return parseBounded(text, { maxChars, maxItems: MAX_CONTROL_POINT_XML_ITEMS });
}
