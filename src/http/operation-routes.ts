import { HubError, errorBody } from '../core/errors';
import { SESSION_PARAM_ALIASES, nearest, type DispatchResult } from '../operations/dispatch';
import { OPERATIONS, parameterNames, type Operation } from '../operations/table';
import { clip } from '../redact';
import { legacyErrorBody } from './legacy-errors';
import { parseLenientQuery } from './lenient-query';

/**
 * How an operation request on the wire maps to an operation and its parameters, and how
 * its result maps back: shared by the local REST server and the cloud relay, so both
 * accept exactly the same requests (both dialects, lenient queries, doubled slashes) and
 * answer in exactly the same shapes.
 */

/** Both API dialects: the current one and the first version's (compatibility.md, Older clients). */
export const DIALECTS = [
  { prefix: '/api/v1', legacy: false },
  { prefix: '/v1', legacy: true },
] as const;

/** Names that never belong to a free-text value even when the operation does not take them. */
const ALWAYS_KNOWN = ['Priority', 'access_token', '_', ...SESSION_PARAM_ALIASES];

export interface Answer {
  status: number;
  body: unknown;
}

export interface OperationRoute {
  op: Operation;
  /** Parameter names that end a free-text value in the lenient query parser. */
  known: ReadonlySet<string>;
  /** What resolveOperationPath answers for it in each dialect (built once: nothing is allocated per request). */
  readonly current: ResolvedPath;
  readonly legacy: ResolvedPath;
}

export interface ResolvedPath {
  readonly route: OperationRoute;
  readonly legacy: boolean;
}

/** Every operation's route by name, and by the exact path of each dialect (the fast lookup). */
export interface OperationRoutes extends ReadonlyMap<string, OperationRoute> {
  readonly byPath: ReadonlyMap<string, ResolvedPath>;
}

export function operationRoutes(): OperationRoutes {
  const byName = new Map(
    OPERATIONS.map((op) => {
      const route: { -readonly [K in keyof OperationRoute]?: OperationRoute[K] } = {
        op: op as Operation,
        known: new Set([...parameterNames(op), ...ALWAYS_KNOWN]),
      };
      const built = route as OperationRoute;
      route.current = { route: built, legacy: false };
      route.legacy = { route: built, legacy: true };
      return [op.name, built];
    }),
  );
  const byPath = new Map<string, ResolvedPath>();
  for (const route of byName.values()) {
    for (const d of DIALECTS) byPath.set(`${d.prefix}/${route.op.name}`, d.legacy ? route.legacy : route.current);
  }
  return Object.assign(byName, { byPath });
}

/** The operation a GET path names (tolerating doubled and trailing slashes), if any. */
export function resolveOperationPath(routes: OperationRoutes, url: string): ResolvedPath | undefined {
  const q = url.indexOf('?');
  let path = q < 0 ? url : url.slice(0, q);
  // Nearly every request names the path exactly: one lookup.
  const exact = routes.byPath.get(path);
  if (exact) return exact;
  if (path.includes('//')) path = path.replace(/\/{2,}/g, '/');
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  return routes.byPath.get(path);
}

/** The request's parameters, parsed leniently (see lenient-query.ts). */
export function operationParams(route: OperationRoute, url: string): Record<string, string> {
  return parseLenientQuery(url, route.known);
}

/** The HTTP answer for a dispatch result, in the request's dialect. */
export function operationAnswer(route: OperationRoute, legacy: boolean, result: DispatchResult): Answer {
  if (!result.ok) return { status: result.error.status, body: legacy ? legacyErrorBody(result.error) : errorBody(result.error) };
  if (legacy && route.op.name === 'init_session') {
    // The first API version named the token SessionID.
    const { SessionToken, ...rest } = result.body;
    return { status: 200, body: { SessionID: SessionToken, ...rest } };
  }
  return { status: 200, body: result.body };
}

/** CORS as the API answers it: any origin by default, preflights without a token. */
// Not HEAD: operations answer it with 405 (it would run a play and drop the answer).
export function apiCorsOptions(origin: string, methods: string[] = ['GET', 'OPTIONS']) {
  return {
    origin,
    methods,
    allowedHeaders: ['Authorization', 'Content-Type', 'Cache-Control', 'X-Requested-With'],
    maxAge: 600,
  };
}

const OPERATION_NAMES = OPERATIONS.map((o) => o.name);

/** The error for a request no route took: a non-GET method, or an unknown operation. */
export function unroutedError(method: string, url: string): HubError {
  if (method !== 'GET' && method !== 'OPTIONS') return new HubError('MethodNotAllowed', `${method} is not supported; operations are GET requests.`);
  // Cut short: a 15 KB path must not come back (or reach the log) whole.
  const path = clip(url.split('?')[0], 200);
  const name = path.split('/').filter(Boolean).pop() ?? '';
  // The operation table's nearest name, as the CLI and unknown parameters answer ("did you mean").
  const near = name ? nearest(name.slice(0, 64), OPERATION_NAMES) : undefined;
  const hint = near && near !== name ? ` Did you mean ${near}?` : '';
  return new HubError('UnknownOperation', `No operation at ${method} ${path} (${name || 'empty'}).${hint} See /api/v1/openapi.json.`);
}
