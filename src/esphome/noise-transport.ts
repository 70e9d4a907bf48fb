import { FrameError, type Received, type Transport } from './frame-codec';
import { NOISE_MAX_MESSAGE, NoiseAuthError, NoiseResponder, type CipherState } from './noise';

/**
 * The native API's encrypted framing: frames of an indicator byte 0x01 and a 16-bit
 * big-endian length, carrying first the client's hello (empty) and the Noise handshake, then
 * encrypted messages, each [16-bit id][16-bit length][protobuf]. The states, as ESPHome's:
 *   hello → handshake → ready, and failed on any error (after which nothing is read).
 * The server's hello names the protocol it chose (1: Noise_NNpsk0_25519_ChaChaPoly_SHA256),
 * its name and its MAC, so a client checks it reached the device it meant.
 */
type State = 'hello' | 'handshake' | 'ready' | 'failed';

export class NoiseTransport implements Transport {
  readonly kind = 'noise';
  private state: State = 'hello';
  private pending: Buffer = Buffer.alloc(0);
  private decrypt?: CipherState;
  private encrypt?: CipherState;

  constructor(
    private readonly psk: Buffer,
    private readonly identity: { name: string; mac: string },
    /** Writes handshake frames (before the transport is ready). */
    private readonly write: (b: Buffer) => void,
  ) {}

  receive(chunk: Buffer): Received[] {
    if (this.state === 'failed') return [];
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    const out: Received[] = [];
    while (this.pending.length >= 3) {
      const buf = this.pending;
      if (buf[0] !== 0x01) {
        this.fail(buf[0] === 0x00 ? 'the client speaks plaintext, the hub the encrypted protocol' : `bad indicator byte ${buf[0]}`);
        throw new FrameError('BadIndicator', buf[0] === 0x00 ? 'plaintext client on the encrypted API' : `bad indicator byte ${buf[0]}`);
      }
      const len = buf.readUInt16BE(1);
      if (buf.length < 3 + len) break;
      const payload = buf.subarray(3, 3 + len);
      this.pending = buf.subarray(3 + len);
      const msg = this.frameIn(payload);
      if (msg) out.push(msg);
    }
    if (this.pending.length && this.pending.byteOffset > 0) this.pending = Buffer.from(this.pending);
    return out;
  }

  private frameIn(payload: Buffer): Received | undefined {
    switch (this.state) {
      case 'hello': {
        // The client hello carries nothing ESPHome reads yet; the answer is the server hello.
        const hello = Buffer.concat([Buffer.from([0x01]), Buffer.from(`${this.identity.name}\0${this.identity.mac}\0`, 'utf8')]);
        this.write(this.wrap(hello));
        this.state = 'handshake';
        return undefined;
      }
      case 'handshake': {
        if (payload.length < 1 || payload[0] !== 0x00) {
          this.fail('Bad handshake packet');
          throw new FrameError('BadHandshake', 'a handshake frame that is not one');
        }
        const noise = new NoiseResponder(this.psk);
        try {
          noise.readFirst(payload.subarray(1));
        } catch (e) {
          // What ESPHome answers a client whose key differs: aioesphomeapi reads it as "invalid key".
          this.fail('Handshake MAC failure');
          if (e instanceof NoiseAuthError) throw new FrameError('WrongKey', 'the client’s encryption key differs from the hub’s');
          throw new FrameError('BadHandshake', String(e));
        }
        const { message, decrypt, encrypt } = noise.writeSecond();
        this.decrypt = decrypt;
        this.encrypt = encrypt;
        this.write(this.wrap(Buffer.concat([Buffer.from([0x00]), message])));
        this.state = 'ready';
        return undefined;
      }
      case 'ready': {
        let plain: Buffer;
        try {
          plain = this.decrypt!.decrypt(payload);
        } catch {
          this.state = 'failed';
          throw new FrameError('BadMessage', 'an encrypted frame that does not authenticate');
        }
        if (plain.length < 4) throw new FrameError('BadMessage', 'a decrypted message shorter than its header');
        const id = plain.readUInt16BE(0);
        const len = plain.readUInt16BE(2);
        if (len !== plain.length - 4) throw new FrameError('BadMessage', 'a decrypted message whose length field is wrong');
        return { id, data: plain.subarray(4) };
      }
      default:
        return undefined;
    }
  }

  /** Tells the client why, as ESPHome does (a handshake frame starting with 1, then the reason), and stops reading. */
  private fail(reason: string): void {
    if (this.state !== 'ready' && this.state !== 'failed') {
      // Before the client hello is answered, it expects the server hello first.
      if (this.state === 'hello') this.write(this.wrap(Buffer.from([0x01])));
      this.write(this.wrap(Buffer.concat([Buffer.from([0x01]), Buffer.from(reason, 'utf8')])));
    }
    this.state = 'failed';
  }

  private wrap(payload: Buffer): Buffer {
    const h = Buffer.alloc(3);
    h[0] = 0x01;
    h.writeUInt16BE(payload.length, 1);
    return Buffer.concat([h, payload]);
  }

  frame(id: number, data: Buffer): Buffer | undefined {
    if (this.state !== 'ready') return undefined;
    if (data.length + 4 + 16 > NOISE_MAX_MESSAGE) throw new Error(`message ${id} of ${data.length} bytes exceeds a Noise frame`);
    const head = Buffer.alloc(4);
    head.writeUInt16BE(id, 0);
    head.writeUInt16BE(data.length, 2);
    return this.wrap(this.encrypt!.encrypt(Buffer.concat([head, data])));
  }
}
