import { HubError } from '../core/errors';
import type { ExtensionContext } from '../extensions/extension';
import type { DispatchResult } from '../operations/dispatch';
import { OPERATIONS, OPERATIONS_BY_NAME } from '../operations/table';
import { runOperation } from '../hub-client/run';
import type { BrokerLink } from './broker-link';
import type { Topics } from './topics';
import { SerialQueues } from './serial';

/** zigbee2mqtt's response shape: `{status:"ok",data}` or `{status:"error",error,code}`, transaction echoed. */
export function bridgeResponse(result: DispatchResult, transaction?: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = result.ok
    ? { status: 'ok', data: result.body }
    : {
        status: 'error',
        error: result.error.message,
        code: result.error.code,
        ...(result.error.parameter ? { parameter: result.error.parameter } : {}),
      };
  if (transaction !== undefined) out.transaction = transaction;
  return out;
}

export function failed(code: ConstructorParameters<typeof HubError>[0], message: string, parameter?: string): DispatchResult {
  return { ok: false, error: new HubError(code, message, parameter ? { parameter } : undefined) };
}

/** A success without a dispatch of its own (a set that combined several operations, or had nothing left to do). */
export function succeeded(op: string): DispatchResult {
  return { ok: true, op: OPERATIONS_BY_NAME.get(op)!, body: { Result: 'true' } };
}

/**
 * Parses a JSON object payload (an empty payload is `{}`); anything else is an
 * InvalidParameter answer, since the topic already says which operation it was for.
 */
export function objectPayload(payload: Buffer): { ok: true; value: Record<string, unknown> } | { ok: false; result: DispatchResult } {
  const text = payload.toString('utf8').trim();
  if (text === '') return { ok: true, value: {} };
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { ok: false, result: failed('InvalidParameter', 'The payload is not JSON; send a JSON object of parameters (or nothing).') };
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    return { ok: false, result: failed('InvalidParameter', 'The payload must be a JSON object of parameters.') };
  return { ok: true, value: v as Record<string, unknown> };
}

/**
 * The bridge's request/response: `<base>/bridge/request/<operation>` with the operation's
 * parameters as JSON, answered on `<base>/bridge/response/<operation>`. Every operation of
 * the table works, in the bridge's own session (it is a trusted front end).
 */
export class BridgeRequests {
  private readonly order = new SerialQueues();

  constructor(
    private readonly ctx: Pick<ExtensionContext, 'dispatch' | 'run'>,
    private readonly link: Pick<BrokerLink, 'publish'>,
    private readonly topics: Topics,
    private readonly session: string,
    /** Told of every failed request, with its parameters (the error event entities). */
    private readonly onError: (op: string, params: Record<string, unknown>, result: DispatchResult) => void = () => undefined,
  ) {}

  /** Synchronous operations are answered on the spot, without a promise round trip. */
  handle(op: string, payload: Buffer): Promise<void> | void {
    const parsed = objectPayload(payload);
    let transaction: unknown;
    let params: Record<string, unknown> = {};
    let result: DispatchResult;
    if (!parsed.ok) result = parsed.result;
    else {
      const { transaction: t, ...rest } = parsed.value;
      params = rest;
      transaction = t;
      if (Array.isArray(params.DeviceIDList)) params.DeviceIDList = params.DeviceIDList.join(',');
      const given = params.SessionToken ?? params.SesssionToken ?? params.SessionID;
      if (op === 'close_session' && given === undefined) {
        // Without a token this would close the bridge's own session.
        result = failed('InvalidParameter', 'close_session over the bridge needs the SessionToken of the session to close.', 'SessionToken');
      } else {
        // The bridge is one client: its requests are carried out in the order they were sent.
        return this.order.run('bridge', () => {
          const r = runOperation(this.ctx, op, given === undefined ? { ...params, SessionToken: this.session } : params);
          if (r instanceof Promise) return r.then((x) => this.answer(op, x, transaction, params));
          this.answer(op, r, transaction, params);
        });
      }
    }
    this.answer(op, result, transaction, params);
  }

  private answer(op: string, r: DispatchResult, transaction: unknown, params: Record<string, unknown>): void {
    if (!r.ok) this.onError(op, params, r);
    // The topic segment is the client's; keep what goes back into a topic bounded.
    this.link.publish(this.topics.response(op.slice(0, 100)), JSON.stringify(bridgeResponse(r, transaction)), { qos: 1 });
  }
}

/** Operation names for bridge/info, so a client can discover what it may request. */
export const OPERATION_NAMES = OPERATIONS.map((o) => o.name);
