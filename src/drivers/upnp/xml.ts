import { XMLParser } from 'fast-xml-parser';

/**
 * XML helpers for UPnP: escaping for everything we put into SOAP and DIDL-Lite, and a
 * namespace-blind parser for what renderers send back. Renderers disagree on prefixes
 * (s:, SOAP-ENV:, none), so names are matched without them.
 */

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };

/** Escapes text for XML element content and attribute values alike. */
export function escapeXml(value: string): string {
  // Characters XML 1.0 cannot carry at all would make the renderer's parser reject the whole request.
  const clean = value.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '');
  return clean.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

export type XmlValue = string | XmlElement | XmlValue[];
export interface XmlElement {
  [name: string]: XmlValue;
}

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  removeNSPrefix: true,
  // Names, UDNs and versions are text: "007" must not become 7.
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: true,
  processEntities: true,
  htmlEntities: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
});

/** Parses XML into plain objects; throws on text that is not well formed. */
export function parseXml(text: string): XmlElement {
  const doc = parser.parse(text, true) as unknown;
  if (!doc || typeof doc !== 'object') throw new Error('not an XML document');
  return doc as XmlElement;
}

function isElement(v: XmlValue | undefined): v is XmlElement {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Child elements of that name (any namespace prefix), in document order. */
export function children(node: XmlValue | undefined, name: string): XmlValue[] {
  if (!isElement(node)) return [];
  const v = node[name];
  if (v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

export function child(node: XmlValue | undefined, name: string): XmlValue | undefined {
  return children(node, name)[0];
}

/** Follows a path of element names, taking the first match at each step. */
export function at(node: XmlValue | undefined, ...path: string[]): XmlValue | undefined {
  let cur = node;
  for (const name of path) cur = child(cur, name);
  return cur;
}

/** The text content of an element ('' for an empty or missing one). */
export function text(node: XmlValue | undefined): string {
  if (node === undefined) return '';
  if (typeof node === 'string') return node;
  if (Array.isArray(node)) return text(node[0]);
  const t = node['#text'];
  return typeof t === 'string' ? t : '';
}

export function attr(node: XmlValue | undefined, name: string): string | undefined {
  if (!isElement(node)) return undefined;
  const v = node[`@_${name}`];
  return typeof v === 'string' ? v : undefined;
}

/** Element names of a node's children (attributes and text left out). */
export function childNames(node: XmlValue | undefined): string[] {
  if (!isElement(node)) return [];
  return Object.keys(node).filter((k) => !k.startsWith('@_') && k !== '#text');
}
