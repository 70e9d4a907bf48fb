/**
 * An error's message for a log line or an error text, whatever was thrown. Duck-typed: an
 * error from another realm (a vm context, jest) is no instanceof this realm's Error.
 */
export function messageOf(e: unknown): string {
  const message = (e as { message?: unknown } | null | undefined)?.message;
  return typeof message === 'string' ? message : String(e);
}
