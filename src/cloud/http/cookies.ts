export const SESSION_COOKIE = 'shcloud';

export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export function sessionCookie(value: string, secure: boolean, maxAgeS: number): string {
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeS}${secure ? '; Secure' : ''}`;
}

// Any origin serves to resolve against: only whether the result stays on it matters.
const HERE = 'https://cloud.invalid';

/**
 * Where to go after a sign-in or sign-up: a path on this cloud, never another origin. The
 * value is resolved as a browser resolves it (which drops tabs and newlines, so `/<TAB>/host`
 * would become `//host`), and refused unless it stays on the same origin; control
 * characters are refused outright (CR/LF would otherwise reach the Location header).
 */
export function safeNext(next: unknown): string {
  const fallback = '/account';
  // eslint-disable-next-line no-control-regex
  if (typeof next !== 'string' || !next.startsWith('/') || next.length > 2000 || /[\u0000-\u001f\u007f\\]/.test(next)) return fallback;
  try {
    const u = new URL(next, HERE);
    return u.origin === HERE ? `${u.pathname}${u.search}${u.hash}` : fallback;
  } catch {
    return fallback;
  }
}
