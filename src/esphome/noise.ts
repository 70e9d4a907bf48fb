import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  type KeyObject,
} from 'node:crypto';

/**
 * The responder's side of Noise_NNpsk0_25519_ChaChaPoly_SHA256 as ESPHome uses it (the Noise
 * Protocol Framework, revision 34: handshake pattern NNpsk0, prologue "NoiseAPIInit\0\0"),
 * on Node's own X25519, ChaCha20-Poly1305, SHA-256 and HMAC. One message each way:
 *   -> psk, e            (the client proves it holds the key: its payload's tag checks under it)
 *   <- e, ee
 * then Split() gives a cipher per direction.
 */

const PROTOCOL_NAME = 'Noise_NNpsk0_25519_ChaChaPoly_SHA256';
export const NOISE_PROLOGUE = Buffer.from('NoiseAPIInit\0\0', 'latin1');
const DHLEN = 32;
const TAGLEN = 16;
/** Noise's limit on a message, ciphertext included. */
export const NOISE_MAX_MESSAGE = 65535;

/** The key, the handshake or a message failed to authenticate (a wrong key, or tampering). */
export class NoiseAuthError extends Error {
  readonly code = 'NoiseAuthFailed';
}

function sha256(...parts: Buffer[]): Buffer {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
}

function hmac(key: Buffer, ...parts: Buffer[]): Buffer {
  const h = createHmac('sha256', key);
  for (const p of parts) h.update(p);
  return h.digest();
}

/** Noise's HKDF: two or three 32-byte outputs. */
function hkdf(ck: Buffer, ikm: Buffer, n: 2 | 3): Buffer[] {
  const temp = hmac(ck, ikm);
  const o1 = hmac(temp, Buffer.from([1]));
  const o2 = hmac(temp, o1, Buffer.from([2]));
  return n === 2 ? [o1, o2] : [o1, o2, hmac(temp, o2, Buffer.from([3]))];
}

function nonce(n: bigint): Buffer {
  const b = Buffer.alloc(12);
  b.writeBigUInt64LE(n, 4);
  return b;
}

/** A CipherState: a key and a counting nonce (ChaChaPoly, 16-byte tag appended). */
export class CipherState {
  private n = 0n;
  constructor(private readonly key: Buffer) {}

  encrypt(plaintext: Buffer, ad: Buffer = Buffer.alloc(0)): Buffer {
    const c = createCipheriv('chacha20-poly1305', this.key, nonce(this.n++), { authTagLength: TAGLEN });
    c.setAAD(ad, { plaintextLength: plaintext.length });
    return Buffer.concat([c.update(plaintext), c.final(), c.getAuthTag()]);
  }

  decrypt(ciphertext: Buffer, ad: Buffer = Buffer.alloc(0)): Buffer {
    if (ciphertext.length < TAGLEN) throw new NoiseAuthError('message shorter than its tag');
    const d = createDecipheriv('chacha20-poly1305', this.key, nonce(this.n), { authTagLength: TAGLEN });
    d.setAAD(ad, { plaintextLength: ciphertext.length - TAGLEN });
    d.setAuthTag(ciphertext.subarray(ciphertext.length - TAGLEN));
    let out: Buffer;
    try {
      out = Buffer.concat([d.update(ciphertext.subarray(0, ciphertext.length - TAGLEN)), d.final()]);
    } catch {
      throw new NoiseAuthError('message failed authentication');
    }
    this.n++;
    return out;
  }
}

function rawPublic(key: KeyObject): Buffer {
  return Buffer.from(key.export({ format: 'jwk' }).x!, 'base64url');
}

function publicFromRaw(raw: Buffer): KeyObject {
  return createPublicKey({ key: { kty: 'OKP', crv: 'X25519', x: raw.toString('base64url') }, format: 'jwk' });
}

/**
 * One handshake, as the responder. readFirst() takes the client's message and throws
 * NoiseAuthError when its payload does not authenticate (the client's key differs);
 * writeSecond() returns the answer and the transport ciphers.
 */
export class NoiseResponder {
  private h: Buffer;
  private ck: Buffer;
  private k?: CipherState;
  private re?: Buffer;

  constructor(private readonly psk: Buffer) {
    if (psk.length !== 32) throw new Error('the Noise key must be 32 bytes');
    const name = Buffer.from(PROTOCOL_NAME, 'latin1');
    this.h = name.length <= 32 ? Buffer.concat([name, Buffer.alloc(32 - name.length)]) : sha256(name);
    this.ck = this.h;
    this.mixHash(NOISE_PROLOGUE);
  }

  private mixHash(data: Buffer): void {
    this.h = sha256(this.h, data);
  }

  private mixKey(ikm: Buffer): void {
    const [ck, k] = hkdf(this.ck, ikm, 2);
    this.ck = ck;
    this.k = new CipherState(k);
  }

  private mixKeyAndHash(ikm: Buffer): void {
    const [ck, th, k] = hkdf(this.ck, ikm, 3);
    this.ck = ck;
    this.mixHash(th);
    this.k = new CipherState(k);
  }

  private encryptAndHash(p: Buffer): Buffer {
    const c = this.k!.encrypt(p, this.h);
    this.mixHash(c);
    return c;
  }

  private decryptAndHash(c: Buffer): Buffer {
    const p = this.k!.decrypt(c, this.h);
    this.mixHash(c);
    return p;
  }

  /** The client's `psk, e` message; returns its (empty, for ESPHome) payload. */
  readFirst(message: Buffer): Buffer {
    if (message.length < DHLEN + TAGLEN) throw new NoiseAuthError('handshake message too short');
    this.mixKeyAndHash(this.psk);
    this.re = message.subarray(0, DHLEN);
    this.mixHash(this.re);
    this.mixKey(this.re);
    return this.decryptAndHash(message.subarray(DHLEN));
  }

  /** The answer `e, ee` (empty payload) and the ciphers: decrypt for client→hub, encrypt for hub→client. */
  writeSecond(): { message: Buffer; decrypt: CipherState; encrypt: CipherState } {
    const e = generateKeyPairSync('x25519');
    const pub = rawPublic(e.publicKey);
    this.mixHash(pub);
    this.mixKey(pub);
    this.mixKey(diffieHellman({ privateKey: e.privateKey, publicKey: publicFromRaw(this.re!) }));
    const message = Buffer.concat([pub, this.encryptAndHash(Buffer.alloc(0))]);
    const [k1, k2] = hkdf(this.ck, Buffer.alloc(0), 2);
    return { message, decrypt: new CipherState(k1), encrypt: new CipherState(k2) };
  }
}

/** A key as ESPHome writes it (base64 of 32 bytes), or undefined when it is not one. */
export function decodeNoiseKey(key: string): Buffer | undefined {
  if (!/^[A-Za-z0-9+/]{43}=$/.test(key)) return undefined;
  const raw = Buffer.from(key, 'base64');
  return raw.length === 32 ? raw : undefined;
}
