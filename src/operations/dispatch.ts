import type { z } from 'zod';
import { HubError, isHubError, type ErrorCode } from '../core/errors';
import type { HubCore } from '../core/hub-core';
import type { SessionMemo } from '../core/sessions';
import { unquote } from '../util/values';
import { OPERATIONS, OPERATIONS_BY_NAME, type Operation, type OperationName, type ResponseOf } from './table';

/** Front ends hold a memo per client connection; they reach the core only through this module. */
export type { SessionMemo };

export type DispatchResult = { ok: true; op: Operation; body: Record<string, unknown> } | { ok: false; op?: Operation; error: HubError };

/** A dispatch of an operation named in code: its success body is typed. */
export type TypedDispatchResult<N extends OperationName> =
  { ok: true; op: Operation; body: ResponseOf<N> } | { ok: false; op?: Operation; error: HubError };

/**
 * Names under which clients send the session token: the current one, the first API
 * version's SessionID, and the original documentation's misspelling.
 */
export const SESSION_PARAM_ALIASES = ['SessionToken', 'SessionID', 'SesssionToken'] as const;

/**
 * The one way any front end runs an operation: look it up, check and renew the session,
 * validate parameters, run the handler, and turn every failure into a typed HubError.
 * It never throws or rejects. An operation whose handler is synchronous (status, lists,
 * volume reads: most traffic) answers synchronously, without a promise round trip.
 */
export function dispatch<N extends OperationName>(
  hub: HubCore,
  name: N,
  raw: Record<string, unknown>,
): TypedDispatchResult<N> | Promise<TypedDispatchResult<N>>;
export function dispatch(hub: HubCore, name: string, raw: Record<string, unknown>): DispatchResult | Promise<DispatchResult>;
export function dispatch(hub: HubCore, name: string, raw: Record<string, unknown>): DispatchResult | Promise<DispatchResult> {
  const op = OPERATIONS_BY_NAME.get(name);
  if (!op) return { ok: false, error: new HubError('UnknownOperation', `There is no operation named ${JSON.stringify(name).slice(0, 80)}.`) };
  return runOperation(hub, op, raw);
}

/** dispatch() for a front end that has already looked the operation up; memo: see SessionStore.touch. */
export function runOperation(
  hub: HubCore,
  op: Operation,
  raw: Record<string, unknown>,
  memo?: SessionMemo,
): DispatchResult | Promise<DispatchResult> {
  try {
    let sessionToken: string | undefined;
    let sessionKey: string | undefined;
    if (op.needsSession) {
      let given: unknown;
      for (const k of SESSION_PARAM_ALIASES) {
        const v = raw[k];
        if (v !== undefined && v !== null && v !== '') {
          given = v;
          break;
        }
      }
      if (given === undefined)
        throw new HubError('InvalidParameter', 'SessionToken is required; call init_session for one.', { parameter: 'SessionToken' });
      if (typeof given !== 'string' && typeof given !== 'number')
        throw new HubError('InvalidParameter', 'SessionToken must be a string.', { parameter: 'SessionToken' });
      sessionToken = unquote(String(given));
      sessionKey = hub.sessions.touch(sessionToken, memo);
    }
    // A parameter the hub does not know never widens what a command does (a guessed
    // DeviceName would otherwise leave an announcement's target at "every speaker").
    for (const k in raw) if (!ACCEPTED.get(op)!.has(k)) throw unknownParameter(op, k);
    let params: unknown = NO_PARAMS;
    if (!WITHOUT_PARAMS.has(op)) {
      const parsed = op.params.safeParse(raw);
      if (!parsed.success) throw issueToError(parsed.error);
      params = parsed.data;
    }
    const out = op.handler(hub, params as never, { sessionToken, sessionKey });
    if (out instanceof Promise) {
      return out.then(
        (body): DispatchResult => ({ ok: true, op, body: body as Record<string, unknown> }),
        (e: unknown) => failure(hub, op, e),
      );
    }
    return { ok: true, op, body: out as Record<string, unknown> };
  } catch (e) {
    return failure(hub, op, e);
  }
}

function failure(hub: HubCore, op: Operation, e: unknown): DispatchResult {
  if (isHubError(e)) return { ok: false, op, error: e };
  hub.logger.error({ op: op.name, err: e instanceof Error ? { message: e.message, stack: e.stack } : String(e) }, 'operation failed unexpectedly');
  return { ok: false, op, error: new HubError('InternalError', 'The hub hit an unexpected fault; it has been logged.') };
}

/**
 * Names a request may carry beside an operation's own parameters: the session token under
 * its three names, a browser's cache-busting `_`, the event stream's `access_token`, and
 * `Priority`, which old clients send on every command (ignored where the operation has none).
 */
const ALWAYS_ACCEPTED = [...SESSION_PARAM_ALIASES, '_', 'access_token', 'Priority'];

/** Every name each operation accepts (built once). */
const ACCEPTED = new Map<Operation, ReadonlySet<string>>(OPERATIONS.map((o) => [o, new Set([...Object.keys(o.params.shape), ...ALWAYS_ACCEPTED])]));

/** InvalidParameter for a name the operation does not take, with the nearest one it does ("did you mean"). */
function unknownParameter(op: Operation, name: string): HubError {
  const own = Object.keys(op.params.shape);
  const shown = name.length > 40 ? `${name.slice(0, 40)}…` : name;
  const near = nearest(name, own);
  const hint = near ? ` Did you mean ${near}?` : own.length ? ` It takes ${own.join(', ')}.` : ' It takes no parameter but SessionToken.';
  return new HubError('InvalidParameter', `${op.name} has no parameter ${JSON.stringify(shown)}.${hint}`, { parameter: shown });
}

/** The candidate closest to name (case-insensitive edit distance, or one contains the other), if close enough. */
export function nearest(name: string, candidates: string[]): string | undefined {
  const n = name.toLowerCase().slice(0, 64);
  let best: string | undefined;
  let bestScore = Infinity;
  for (const c of candidates) {
    const l = c.toLowerCase();
    const score = l.includes(n) || n.includes(l) ? 1 : distance(n, l);
    if (score < bestScore) {
      best = c;
      bestScore = score;
    }
  }
  return best !== undefined && bestScore <= Math.max(2, Math.floor(name.length / 3)) ? best : undefined;
}

/** Levenshtein distance (both strings are short: names capped at 64 characters). */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length];
}

/** Operations that take nothing but the session: validating an empty object is wasted work on the hottest paths. */
const WITHOUT_PARAMS = new Set<Operation>(OPERATIONS.filter((o) => Object.keys(o.params.shape).length === 0));
const NO_PARAMS = Object.freeze({});

/** A zod failure as the HubError every front end answers (shared with the Node-RED nodes). */
export function issueToError(error: z.ZodError): HubError {
  const issue = error.issues[0];
  const parameter = String(issue.path[0] ?? '');
  const code = ((issue as { params?: { errorCode?: ErrorCode } }).params?.errorCode ?? 'InvalidParameter') as ErrorCode;
  const missing = issue.code === 'invalid_type' && (issue as { input?: unknown }).input === undefined;
  const message = missing ? `${parameter} is required.` : issue.message.startsWith(parameter) ? issue.message : `${parameter}: ${issue.message}`;
  return new HubError(code, message, { parameter });
}
