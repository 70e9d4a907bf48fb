import { XMLParser, XMLValidator } from 'fast-xml-parser';

/**
 * XML for the renderers: escaping what goes out, and a bounded parser for what control
 * points send (SOAP bodies, DIDL-Lite metadata). Entities are never expanded by the parser
 * (no DTD, no "billion laughs"): a document with a DOCTYPE is refused, and only XML's five
 * predefined entities and character references are decoded, by hand, in text values.
 */

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };

/** Escapes text for element content and attribute values alike; drops what XML 1.0 cannot carry. */
export function escapeXml(value: string): string {
  // eslint-disable-next-line no-control-regex
  const clean = value.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '');
  return clean.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** Decodes the predefined entities and character references; anything else stays as written. */
export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]{1,6}|#[0-9]{1,7}|amp|lt|gt|quot|apos);/g, (all, e: string) => {
    if (e[0] !== '#') return NAMED[e];
    const code = e[1] === 'x' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : all;
  });
}

export type XmlValue = string | XmlElement | XmlValue[];
export interface XmlElement {
  [name: string]: XmlValue;
}

export class XmlError extends Error {}

/** Deepest nesting accepted; SOAP and DIDL-Lite need a handful of levels. */
const MAX_DEPTH = 32;

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  removeNSPrefix: true,
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: true,
  processEntities: false,
  htmlEntities: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
});

/** Parses a bounded document: too long, a DOCTYPE, not well formed or too deep → XmlError. */
export function parseXml(text: string, maxChars: number): XmlElement {
  if (text.length > maxChars) throw new XmlError(`document longer than ${maxChars} characters`);
  if (/<!DOCTYPE|<!ENTITY/i.test(text)) throw new XmlError('DOCTYPE and entity declarations are not accepted');
  if (depthOf(text) > MAX_DEPTH) throw new XmlError(`nested deeper than ${MAX_DEPTH} elements`);
  const valid = XMLValidator.validate(text);
  if (valid !== true) throw new XmlError(`not well-formed XML: ${valid.err.msg}`);
  let doc: unknown;
  try {
    doc = parser.parse(text);
  } catch (e) {
    throw new XmlError(`not well-formed XML: ${(e as Error).message}`);
  }
  if (!doc || typeof doc !== 'object') throw new XmlError('not an XML document');
  return doc as XmlElement;
}

/** A cheap upper bound of the nesting (start tags minus end tags at the deepest point). */
function depthOf(text: string): number {
  let depth = 0;
  let max = 0;
  const tag = /<(\/?)[A-Za-z_][^>]*?(\/?)>/g;
  for (let m = tag.exec(text); m; m = tag.exec(text)) {
    if (m[1]) depth--;
    else if (!m[2]) depth++;
    if (depth > max) max = depth;
  }
  return max;
}

export function isElement(v: XmlValue | undefined): v is XmlElement {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The first child element of that name (namespace prefixes removed). */
export function child(node: XmlValue | undefined, name: string): XmlValue | undefined {
  if (!isElement(node)) return undefined;
  const v = node[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The text of an element, entities decoded ('' for an empty or missing one). */
export function text(node: XmlValue | undefined): string {
  if (node === undefined) return '';
  if (typeof node === 'string') return decodeEntities(node);
  if (Array.isArray(node)) return text(node[0]);
  const t = node['#text'];
  return typeof t === 'string' ? decodeEntities(t) : '';
}

export function attr(node: XmlValue | undefined, name: string): string | undefined {
  if (!isElement(node)) return undefined;
  const v = node[`@_${name}`];
  return typeof v === 'string' ? decodeEntities(v) : undefined;
}
