import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * What a client of the embedded broker may do, decided at CONNECT from its credentials,
 * with the messaging service's semantics: the subscribe key alone reads, the subscribe key
 * with the publish key also writes. The hub's own client gets a per-run credential.
 */
export type Rights = 'hub' | 'publish' | 'subscribe';

/** Username of the hub's own client at its embedded broker. */
export const HUB_USERNAME = 'speakerhub-internal';

export class KeyAuth {
  private readonly subscribe: Buffer;
  private readonly publish: Buffer;
  private readonly hub: Buffer;
  /** The hub client's password at the embedded broker: random each start, never shown. */
  readonly hubPassword = randomBytes(32).toString('base64url');

  constructor(keys: { publishKey: string; subscribeKey: string }) {
    this.subscribe = digest(keys.subscribeKey);
    this.publish = digest(keys.publishKey);
    this.hub = digest(this.hubPassword);
  }

  /** The client's rights, or null when its credentials are refused. Constant time per comparison. */
  rights(username: string | undefined, password: Buffer | string | undefined): Rights | null {
    if (!username) return null;
    const pass = password === undefined ? '' : password.toString();
    if (username === HUB_USERNAME) return pass && same(digest(pass), this.hub) ? 'hub' : null;
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
