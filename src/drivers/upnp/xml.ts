/**
 * XML for the upnp driver: the hub's one hardened UPnP XML policy (src/protocols/upnp/xml.ts),
 * the same the DLNA renderers use. A renderer's answers are as untrusted as a control
 * point's requests: bounded, no DOCTYPE, no entity expansion, nesting checked in one pass.
 */
export { at, attr, child, childNames, children, escapeXml, parseXml, text, XmlError } from '../../protocols/upnp/xml';
export type { XmlElement, XmlValue } from '../../protocols/upnp/xml';
