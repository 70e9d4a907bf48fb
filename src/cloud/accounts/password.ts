import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Passwords are hashed with scrypt (memory-hard: N=2^15, r=8 → 32 MiB per hash), a random
 * 16-byte salt each. The stored string names its parameters, so they can be raised later
 * without invalidating existing hashes.
 */
const PARAMS = { N: 1 << 15, r: 8, p: 1 } as const;
const KEY_LENGTH = 32;

/**
 * Each hash holds 32 MiB while it runs: at most this many run at once (the others queue,
 * and the queue is bounded), so a burst of sign-ins cannot exhaust memory.
 */
const MAX_CONCURRENT = 2;
const MAX_QUEUED = 200;
let running = 0;
const queue: (() => void)[] = [];

async function derive(password: string, salt: Buffer, o: { N: number; r: number; p: number }): Promise<Buffer> {
  if (running >= MAX_CONCURRENT) {
    if (queue.length >= MAX_QUEUED) throw new Error('too many password checks in progress');
    // The finishing hash hands its slot over: `running` stays counted for us.
    await new Promise<void>((resolve) => queue.push(resolve));
  } else running++;
  try {
    const options: ScryptOptions = { ...o, maxmem: 128 * o.N * o.r * 2 };
    return await new Promise((resolve, reject) =>
      scrypt(password.normalize('NFC'), salt, KEY_LENGTH, options, (e, key) => (e ? reject(e) : resolve(key))),
    );
  } finally {
    const next = queue.shift();
    if (next) next();
    else running--;
  }
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, PARAMS);
  return `scrypt$${PARAMS.N}$${PARAMS.r}$${PARAMS.p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [kind, N, r, p, salt, key] = stored.split('$');
  if (kind !== 'scrypt' || !key) return false;
  const expected = Buffer.from(key, 'base64url');
  const actual = await derive(password, Buffer.from(salt, 'base64url'), { N: Number(N), r: Number(r), p: Number(p) });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** Spent on unknown usernames too, so response times do not tell which usernames exist. */
let dummy: Promise<string> | undefined;
export async function burnPasswordCheck(password: string): Promise<void> {
  dummy ??= hashPassword('not a real password');
  await verifyPassword(password, await dummy);
}
