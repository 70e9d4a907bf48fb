import { XMLParser, XMLValidator } from 'fast-xml-parser';

/**
 * The one XML policy for everything UPnP the hub reads from a peer: SOAP bodies and
 * DIDL-Lite from control points (the DLNA renderers), descriptions, SOAP answers and GENA
 * events from renderers (the upnp driver). A peer's XML is hostile until parsed:
 *
 * - bounded length (the caller's bound; DEFAULT_MAX_XML_CHARS otherwise);
 * - no DOCTYPE and no entity declaration (so no "billion laughs", no external entity);
 * - entities never expanded by the parser: only XML's five predefined entities and
 *   character references are decoded, by hand, in text() and attr();
 * - nesting bounded, measured in ONE linear pass before the parser sees the text (the old
 *   regex pre-check rescanned to the end of the text at every '<', so a 64 KB body of
 *   "<a<a<a…" cost seconds of CPU).
 */

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };

/** Escapes text for element content and attribute values alike; drops what XML 1.0 cannot carry. */
export function escapeXml(value: string): string {
  // Characters XML 1.0 cannot carry at all would make the peer's parser reject the whole document.
  // eslint-disable-next-line no-control-regex
  const clean = value.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '');
  return clean.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** Decodes the predefined entities and character references; anything else stays as written. */
export function decodeEntities(text: string): string {
  if (!text.includes('&')) return text;
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

/** A peer's document refused: too long, a DOCTYPE, not well formed or too deep. */
export class XmlError extends Error {
  readonly code = 'BadXml';
}

/** Deepest nesting accepted; SOAP, DIDL-Lite, descriptions and LastChange need a handful of levels. */
export const MAX_XML_DEPTH = 32;
/** Bound when the caller names none (descriptions and SCPDs are a few KB; 1 MB is generous). */
export const DEFAULT_MAX_XML_CHARS = 1024 * 1024;
/**
 * Most elements plus attributes when the caller names none. The parser is linear but not
 * cheap (~5 µs an item): a bound on items, not only characters, bounds the CPU one document
 * costs. A large renderer's SCPD has ~2,000.
 */
export const DEFAULT_MAX_XML_ITEMS = 8192;

/**
 * Elements plus attributes a control point's document may hold: a SOAP request has a dozen,
 * a DIDL-Lite item a few dozen. The bound caps the parser's CPU per request (issue 32 item 5).
 */
export const MAX_CONTROL_POINT_XML_ITEMS = 1024;

export interface XmlBounds {
  maxChars?: number;
  maxItems?: number;
}

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  // Peers disagree on prefixes (s:, SOAP-ENV:, none), so names are matched without them.
  removeNSPrefix: true,
  // Names, UDNs and versions are text: "007" must not become 7.
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: true,
  processEntities: false,
  htmlEntities: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
});

/** Parses a bounded document: too long, a DOCTYPE, not well formed or too deep → XmlError. */
export function parseXml(text: string, bounds: XmlBounds = {}): XmlElement {
  const maxChars = bounds.maxChars ?? DEFAULT_MAX_XML_CHARS;
  if (text.length > maxChars) throw new XmlError(`document longer than ${maxChars} characters`);
  checkShape(text, MAX_XML_DEPTH, bounds.maxItems ?? DEFAULT_MAX_XML_ITEMS);
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

/** Parses a control point's document (SOAP body, DIDL-Lite) within maxChars and MAX_CONTROL_POINT_XML_ITEMS. */
export function parseControlPointXml(text: string, maxChars: number): XmlElement {
  return parseXml(text, { maxChars, maxItems: MAX_CONTROL_POINT_XML_ITEMS });
}

/**
 * One linear pass over the text: refuses DOCTYPE/ENTITY declarations, a '<' inside a tag
 * (never well formed, and what the quadratic attack is made of), unterminated markup,
 * nesting deeper than maxDepth and more than maxItems elements and attributes. Every index only moves forward, so the cost is O(length)
 * whatever the input; the parser runs only on text that passed.
 */
export function checkShape(text: string, maxDepth: number, maxItems: number): void {
  const n = text.length;
  let depth = 0;
  let items = 0;
  let i = text.indexOf('<');
  while (i !== -1) {
    const next = text.charCodeAt(i + 1);
    if (next === 0x21 /* ! */) {
      if (text.startsWith('<!--', i)) i = skipTo(text, '-->', i + 4, 'comment');
      else if (text.startsWith('<![CDATA[', i)) i = skipTo(text, ']]>', i + 9, 'CDATA section');
      else throw new XmlError('DOCTYPE and entity declarations are not accepted');
    } else if (next === 0x3f /* ? */) {
      i = skipTo(text, '?>', i + 2, 'processing instruction');
    } else {
      const closing = next === 0x2f; /* / */
      // Scan the tag to its '>' by hand: quotes may hold '>' but never '<'.
      let j = i + 1;
      let quote = 0;
      for (; j < n; j++) {
        const c = text.charCodeAt(j);
        if (quote) {
          if (c === quote) quote = 0;
          else if (c === 0x3c) throw new XmlError("'<' inside an attribute value");
        } else if (c === 0x22 || c === 0x27) quote = c;
        else if (c === 0x3e /* > */) break;
        else if (c === 0x3d /* = */ && ++items > maxItems) throw new XmlError(`more than ${maxItems} elements and attributes`);
        else if (c === 0x3c) throw new XmlError("'<' inside a tag");
      }
      if (j >= n) throw new XmlError('unterminated tag');
      if (closing) depth--;
      else {
        if (++items > maxItems) throw new XmlError(`more than ${maxItems} elements and attributes`);
        if (text.charCodeAt(j - 1) !== 0x2f && ++depth > maxDepth) throw new XmlError(`nested deeper than ${maxDepth} elements`);
      }
      i = j + 1;
    }
    i = text.indexOf('<', i);
  }
}

function skipTo(text: string, end: string, from: number, what: string): number {
  const k = text.indexOf(end, from);
  if (k === -1) throw new XmlError(`unterminated ${what}`);
  return k + end.length;
}

export function isElement(v: XmlValue | undefined): v is XmlElement {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Child elements of that name (any namespace prefix), in document order. */
export function children(node: XmlValue | undefined, name: string): XmlValue[] {
  if (!isElement(node)) return [];
  const v = node[name];
  if (v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

/** The first child element of that name (namespace prefixes removed). */
export function child(node: XmlValue | undefined, name: string): XmlValue | undefined {
  return children(node, name)[0];
}

/** Follows a path of element names, taking the first match at each step. */
export function at(node: XmlValue | undefined, ...path: string[]): XmlValue | undefined {
  let cur = node;
  for (const name of path) cur = child(cur, name);
  return cur;
}

/** The text of an element, entities decoded ('' for an empty or missing one). */
export function text(node: XmlValue | undefined): string {
  if (node === undefined) return '';
  if (typeof node === 'string') return decodeEntities(node);
  if (Array.isArray(node)) return text(node[0]);
  const t = node['#text'];
  return typeof t === 'string' ? decodeEntities(t) : '';
}

/** An attribute's value, entities decoded. */
export function attr(node: XmlValue | undefined, name: string): string | undefined {
  if (!isElement(node)) return undefined;
  const v = node[`@_${name}`];
  return typeof v === 'string' ? decodeEntities(v) : undefined;
}

/** Element names of a node's children (attributes and text left out). */
export function childNames(node: XmlValue | undefined): string[] {
  if (!isElement(node)) return [];
  return Object.keys(node).filter((k) => !k.startsWith('@_') && k !== '#text');
}
