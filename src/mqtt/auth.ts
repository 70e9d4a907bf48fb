import { hash, timingSafeEqual } from 'node:crypto';

/**
 * What a client of the embedded broker may do, decided at CONNECT from its credentials,
 * with the messaging service's semantics: the subscribe key alone reads, the subscribe key
 * with the publish key also writes. The hub itself is no client there: it is attached in
 * process (embedded-link.ts), so no credential exists for it.
 */
export type Rights = 'publish' | 'subscribe';

export class KeyAuth {
  private readonly subscribe: Buffer;
  private readonly publish: Buffer;

  constructor(keys: { publishKey: string; subscribeKey: string }) {
    this.subscribe = digest(keys.subscribeKey);
    this.publish = digest(keys.publishKey);
  }

  /** The client's rights, or null when its credentials are refused. Constant time per comparison. */
  rights(username: string | undefined, password: Buffer | string | undefined): Rights | null {
    if (!username) return null;
    const pass = password === undefined ? '' : password.toString();
    if (!same(digest(username), this.subscribe)) return null;
    // An absent and an empty password both mean read-only (a subscribe-key client).
    if (pass === '') return 'subscribe';
    return same(digest(pass), this.publish) ? 'publish' : null;
  }
}

/** Hashing first makes both sides the same length, so timingSafeEqual never leaks a length. */
function digest(s: string): Buffer {
  return hash('sha256', s, 'buffer');
}

function same(a: Buffer, b: Buffer): boolean {
  return timingSafeEqual(a, b);
}
