import { HubError } from '../core/errors';
import type { ExtensionContext } from '../extensions/extension';
import type { DispatchResult } from '../operations/dispatch';
import { OPERATIONS_BY_NAME } from '../operations/table';

/**
 * Runs an operation by name, as every front end inside the hub does: through ctx.run
 * (synchronous handlers answer without a promise round trip, as on the REST fast path) when
 * the table has it, else through dispatch for its typed error (UnknownOperation).
 */
export function runOperation(
  ctx: Pick<ExtensionContext, 'dispatch' | 'run'>,
  name: string,
  params: Record<string, unknown>,
): DispatchResult | Promise<DispatchResult> {
  const op = OPERATIONS_BY_NAME.get(name);
  return op ? ctx.run(op, params) : ctx.dispatch(name, params);
}

/** Whether an operation (by name, as a client gives it) needs a SessionToken; unknown names do (the hub answers for them). */
export function needsSession(name: string): boolean {
  return OPERATIONS_BY_NAME.get(name)?.needsSession ?? true;
}

/** A dispatch result as a promise's outcome: the body, or the typed error. */
export function bodyOf(result: DispatchResult): Record<string, unknown> {
  if (result.ok) return result.body;
  throw result.error instanceof HubError ? result.error : new HubError('InternalError', String(result.error));
}
