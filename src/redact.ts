/**
 * The one redaction policy of the hub. Every text that may leave the process (log lines,
 * ErrorMessage, event details, driver logs) goes through redactText() so that a secret a
 * client or a speaker handed us never comes back out in clear:
 *
 * - credentials in URLs (`http://user:pass@host/` → `http://[redacted]@host/`);
 * - query values whose name says they are secret (`token=`, `key=`, `access_token=`,
 *   `SessionToken=`, `SessionID=`, `sig=`, `password=` …, any case, also `%`-encoded names);
 * - bearer tokens (`Bearer abc…`) and `Authorization:` header values;
 * - the hub's own capability ids in media URLs (`/media/<id>/` → `/media/[redacted]/`).
 *
 * The rules are textual on purpose: a URL inside an error message, a JSON log line or a
 * speaker's SOAP fault is caught the same way as a bare URL.
 */

export const REDACTED = '[redacted]';

/** Query names whose values are secrets (compared after %-decoding, case-insensitively). */
const SECRET_NAME =
  /^(?:.*token|.*key|sessionid|sesssiontoken|access_token|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|password|passwd|pwd|secret|auth|authorization|code|credential|credentials)$/i;

// scheme://user:pass@  or  scheme://user@  (userinfo before the host)
const USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@"'<>\\]+@/gi;
// name=value pairs wherever they stand (a query, a form body, a message, a JSON string);
// the value ends at a separator, a quote or a backslash (so JSON escapes stay intact).
const PAIR = /(^|[^A-Za-z0-9_.%-])([A-Za-z0-9_.%-]{1,64})=([^\s&#;"'<>\\,)]*)/g;
// Not the words themselves in prose ("the bearer token is missing"): a credential is never
// the word "token", and redacting it made the 401 log line unreadable.
const BEARER = /\b(Bearer|Basic)\s+(?!token\b|tokens\b)[A-Za-z0-9._~+/=-]+/gi;
const MEDIA_ID = /\/media\/[A-Za-z0-9_-]{16,}(?=[/?#"'\s]|$)/g;

/** Redacts every secret the rules above recognise in a text (URLs, messages, log lines). */
export function redactText(text: string): string {
  if (!text) return text;
  let out = text;
  if (out.includes('://')) out = out.replace(USERINFO, `$1${REDACTED}@`);
  if (out.includes('=')) {
    out = out.replace(PAIR, (whole, lead: string, name: string, value: string) => {
      if (!value || value === REDACTED || !SECRET_NAME.test(decodeName(name))) return whole;
      return `${lead}${name}=${REDACTED}`;
    });
  }
  if (/bearer|basic/i.test(out)) out = out.replace(BEARER, `$1 ${REDACTED}`);
  if (out.includes('/media/')) out = out.replace(MEDIA_ID, `/media/${REDACTED}`);
  return out;
}

/** redactText() for a URL (the same rules; named for readability at call sites). */
export function redactUrl(url: string): string {
  return redactText(url);
}

/**
 * Untrusted input put into a log line or a message: redacted, then cut to `max`
 * characters, so a 15 KB path costs a few hundred bytes of log, not 15 KB.
 */
export function clip(text: string, max = 120): string {
  const r = redactText(text);
  return r.length <= max ? r : `${r.slice(0, max)}…(${text.length} chars)`;
}

/** Shows only enough of a token to tell two apart in a log. */
export function maskToken(token: string): string {
  return token.length <= 8 ? '***' : `${token.slice(0, 4)}…(${token.length} chars)`;
}

function decodeName(name: string): string {
  if (!name.includes('%')) return name;
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}
