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
