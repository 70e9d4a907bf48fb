import { issueToError } from '../operations/dispatch';
import type { Operation } from '../operations/table';

/** The parameters an operation takes, by their API names (SessionToken is the config node's business). */
export function operationParams(op: Operation): string[] {
  return Object.keys(op.params.shape);
}

/** The parameter a plain string msg.payload stands for: Text or MediaUrl (the only free-text inputs). */
export function stringPayloadParam(op: Operation): string | undefined {
  const names = operationParams(op);
  return names.find((n) => n === 'Text') ?? names.find((n) => n === 'MediaUrl');
}

/** A value as it goes on the wire: arrays (a DeviceIDList built in a function node) become comma lists. */
function wireValue(v: unknown): unknown {
  return Array.isArray(v) ? v.map(String).join(',') : v;
}

/**
 * The node's settings, overridden by msg.payload: an object of parameters by API name (so an
 * http-in GET's query works as is), or a string for Text/MediaUrl. Keys the operation does not
 * take are left out (a message often carries other data; REST refuses them, see dispatch.ts).
 * Empty settings count as unset.
 */
export function mergeParams(op: Operation, settings: Record<string, unknown>, payload: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const names = operationParams(op);
  for (const n of names) {
    const v = settings[n];
    if (v !== undefined && v !== null && v !== '' && !(Array.isArray(v) && v.length === 0)) out[n] = wireValue(v);
  }
  if (typeof payload === 'string') {
    const target = stringPayloadParam(op);
    if (target) out[target] = payload;
  } else if (payload && typeof payload === 'object' && !Array.isArray(payload) && !Buffer.isBuffer(payload)) {
    const p = payload as Record<string, unknown>;
    for (const n of names) if (p[n] !== undefined && p[n] !== null) out[n] = wireValue(p[n]);
  }
  return out;
}

/**
 * Validates with the operation's own zod schema (the one REST, MQTT and dispatch use), so a
 * bad value fails here with the same error code and message the hub would answer.
 */
export function validateParams(op: Operation, params: Record<string, unknown>): void {
  const parsed = op.params.safeParse(params);
  if (!parsed.success) throw issueToError(parsed.error);
}
