import { constants, createCipheriv, createPublicKey, publicEncrypt, randomBytes, type KeyObject } from 'node:crypto';

/**
 * RAOP payload encryption: each audio packet's payload is AES-128-CBC encrypted (whole 16-byte
 * blocks only; the tail stays clear; the IV restarts per packet), and the AES key travels in the
 * ANNOUNCE wrapped with RSA-OAEP under the AirPort Express public key, whose private half every
 * receiver (shairport-sync included) holds.
 */
const AIRPORT_MODULUS =
  '59dE8qLieItsH1WgjrcFRKj6eUWqi+bGLOX1HL3U3GhC/j0Qg90u3sG/1CUtwC5vOYvfDmFI6oSFXi5ELabWJmT2dKHzBJKa3k9ok+8t9ucRqMd6DZHJ2YCCLlDRKSKv6kDqnw4UwPdpOMXziC/AMj3Z/lUVX1G7WSHCAWKf1zNS1eLvqr+boEjXuBOitnZ/bDzPHrTOZz0Dew0uowxf/+sG+NCK3eQJVxqcaJ/vEHKIVd2M+5qL71yJQ+87X6oV3eaYvt3zWZYD6z5vYTcrtij2VZ9Zmni/UAaHqn9JdsBWLUEpVviYnhimNVvYFZeCXg/IdTQ+x4IRdiXNv5hEew==';

let airportKey: KeyObject | undefined;
function airportPublicKey(): KeyObject {
  airportKey ??= createPublicKey({
    key: { kty: 'RSA', n: toB64Url(AIRPORT_MODULUS), e: 'AQAB' },
    format: 'jwk',
  });
  return airportKey;
}

function toB64Url(b64: string): string {
  return b64.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** SDP attributes carry base64 without padding. */
export function b64NoPad(buf: Buffer): string {
  return buf.toString('base64').replace(/=+$/, '');
}

export class PayloadCipher {
  readonly key = randomBytes(16);
  readonly iv = randomBytes(16);

  /** a=rsaaeskey value. */
  wrappedKey(): string {
    return b64NoPad(publicEncrypt({ key: airportPublicKey(), padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha1' }, this.key));
  }

  encrypt(payload: Buffer): Buffer {
    const whole = payload.length - (payload.length % 16);
    const c = createCipheriv('aes-128-cbc', this.key, this.iv).setAutoPadding(false);
    const enc = c.update(payload.subarray(0, whole));
    c.final();
    return Buffer.concat([enc, payload.subarray(whole)]);
  }
}
