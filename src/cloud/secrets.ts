import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

/** 256 random bits, URL-safe: every token, code and secret the cloud hands out. */
export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * What the database keeps instead of a secret. The secrets are 256-bit random, so a plain
 * SHA-256 suffices (no KDF needed), and lookups by digest compare no secret bytes.
 */
export function digest(secret: string): string {
  return hash('sha256', secret, 'base64url');
}

export function sameDigest(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
