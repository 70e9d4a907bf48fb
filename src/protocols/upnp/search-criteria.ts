/**
 * ContentDirectory:1 SearchCriteria (UPnP AV CDS 1.0, 2.5.5): parsed into a tree, evaluated
 * against an object's properties. What is understood: `*`; `and` / `or` (and binds tighter)
 * and parentheses; `=`, `!=`, `contains`, `doesNotContain`, `derivedfrom`, `exists`, and
 * `<` `<=` `>` `>=` on the properties in SEARCH_PROPERTIES. Anything else — another property,
 * a malformed string, a criteria longer than MAX_CRITERIA_CHARS or nested/joined beyond the
 * bounds — is a SearchCriteriaError, which the ContentDirectory answers with UPnP error 708.
 */

export const MAX_CRITERIA_CHARS = 1024;
const MAX_DEPTH = 16;
const MAX_TERMS = 64;

/** Properties a search may name (GetSearchCapabilities). */
export const SEARCH_PROPERTIES = [
  'upnp:class',
  'dc:title',
  'dc:creator',
  'upnp:artist',
  'upnp:album',
  'upnp:genre',
  '@id',
  '@parentID',
  '@refID',
] as const;
export type SearchProperty = (typeof SEARCH_PROPERTIES)[number];

type Op = '=' | '!=' | '<' | '<=' | '>' | '>=' | 'contains' | 'doesnotcontain' | 'derivedfrom' | 'exists';

export type Criteria =
  { kind: 'all' } | { kind: 'and' | 'or'; left: Criteria; right: Criteria } | { kind: 'rel'; property: SearchProperty; op: Op; value: string };

export class SearchCriteriaError extends Error {
  readonly code = 'UnsupportedSearchCriteria';
}

type Token = { t: 'word'; v: string } | { t: 'string'; v: string } | { t: '(' } | { t: ')' };

function tokenize(text: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === '(' || c === ')') {
      out.push({ t: c });
      i++;
    } else if (c === '"') {
      // A quoted value: \" and \\ are the only escapes.
      let v = '';
      i++;
      for (;;) {
        if (i >= n) throw new SearchCriteriaError('unterminated string');
        const d = text[i];
        if (d === '\\') {
          const e = text[i + 1];
          if (e !== '"' && e !== '\\') throw new SearchCriteriaError('bad escape in a string');
          v += e;
          i += 2;
        } else if (d === '"') {
          i++;
          break;
        } else {
          v += d;
          i++;
        }
      }
      out.push({ t: 'string', v });
    } else {
      const m = /^(!=|<=|>=|=|<|>|[A-Za-z_@][A-Za-z0-9_:@.-]*)/.exec(text.slice(i, i + 64));
      if (!m) throw new SearchCriteriaError(`unexpected ${JSON.stringify(c)}`);
      out.push({ t: 'word', v: m[1] });
      i += m[1].length;
    }
    if (out.length > MAX_TERMS * 4) throw new SearchCriteriaError('too many terms');
  }
  return out;
}

/** The criteria as a tree; SearchCriteriaError when it is not one this server understands. */
export function parseSearchCriteria(text: string): Criteria {
  if (text.length > MAX_CRITERIA_CHARS) throw new SearchCriteriaError(`longer than ${MAX_CRITERIA_CHARS} characters`);
  const trimmed = text.trim();
  if (trimmed === '*' || trimmed === '') return { kind: 'all' };
  const tokens = tokenize(trimmed);
  let pos = 0;
  let terms = 0;
  const peekWord = () => {
    const t = tokens[pos];
    return t?.t === 'word' ? t.v.toLowerCase() : undefined;
  };
  /** A left-associative chain of `operand`s joined by the word `kind`. */
  const chain =
    (kind: 'and' | 'or', operand: (depth: number) => Criteria) =>
    (depth: number): Criteria => {
      let left = operand(depth);
      while (peekWord() === kind) {
        pos++;
        left = { kind, left, right: operand(depth) };
      }
      return left;
    };
  // `and` binds tighter than `or`; primary reaches back to `or` for parentheses.
  const and = chain('and', (depth) => primary(depth));
  const or = chain('or', and);
  const primary = (depth: number): Criteria => {
    if (depth > MAX_DEPTH) throw new SearchCriteriaError(`nested deeper than ${MAX_DEPTH}`);
    if (++terms > MAX_TERMS) throw new SearchCriteriaError(`more than ${MAX_TERMS} terms`);
    const t = tokens[pos++];
    if (!t) throw new SearchCriteriaError('criteria ends too early');
    if (t.t === '(') {
      const inner = or(depth + 1);
      if (tokens[pos++]?.t !== ')') throw new SearchCriteriaError("missing ')'");
      return inner;
    }
    if (t.t !== 'word') throw new SearchCriteriaError('a property name was expected');
    const property = SEARCH_PROPERTIES.find((p) => p.toLowerCase() === t.v.toLowerCase());
    if (!property) throw new SearchCriteriaError(`cannot search by ${t.v}`);
    const opToken = tokens[pos++];
    const op = (opToken?.t === 'word' ? opToken.v.toLowerCase() : '') as Op;
    if (!['=', '!=', '<', '<=', '>', '>=', 'contains', 'doesnotcontain', 'derivedfrom', 'exists'].includes(op)) {
      throw new SearchCriteriaError(`unknown operator after ${property}`);
    }
    const value = tokens[pos++];
    if (op === 'exists') {
      const v = value?.t === 'word' ? value.v.toLowerCase() : '';
      if (v !== 'true' && v !== 'false') throw new SearchCriteriaError('exists takes true or false');
      return { kind: 'rel', property, op, value: v };
    }
    if (value?.t !== 'string') throw new SearchCriteriaError(`a quoted value was expected after ${op}`);
    return { kind: 'rel', property, op, value: value.v };
  };
  const tree = or(0);
  if (pos !== tokens.length) throw new SearchCriteriaError('unexpected text after the criteria');
  return tree;
}

/** An object's searchable properties (missing: the object does not have it). */
export type SearchableObject = Partial<Record<SearchProperty, string>>;

/** Whether the object matches. Strings compare without regard to case, as control points expect. */
export function matchesCriteria(c: Criteria, o: SearchableObject): boolean {
  switch (c.kind) {
    case 'all':
      return true;
    case 'and':
      return matchesCriteria(c.left, o) && matchesCriteria(c.right, o);
    case 'or':
      return matchesCriteria(c.left, o) || matchesCriteria(c.right, o);
    case 'rel': {
      const have = o[c.property];
      if (c.op === 'exists') return (have !== undefined) === (c.value === 'true');
      if (have === undefined) return c.op === '!=' || c.op === 'doesnotcontain';
      const a = have.toLowerCase();
      const b = c.value.toLowerCase();
      switch (c.op) {
        case '=':
          return a === b;
        case '!=':
          return a !== b;
        case 'contains':
          return a.includes(b);
        case 'doesnotcontain':
          return !a.includes(b);
        case 'derivedfrom':
          return a === b || a.startsWith(`${b}.`);
        case '<':
          return a < b;
        case '<=':
          return a <= b;
        case '>':
          return a > b;
        case '>=':
          return a >= b;
      }
    }
  }
  return false;
}
