import { MpdConnectionError } from './errors';

/**
 * Framing of MPD's byte stream: text lines ending in '\n', and after a `binary: N` line exactly
 * N raw bytes and a '\n'. Linear in the bytes received: each byte is looked at once (a partial
 * line is kept as a list of pieces and joined once, not re-scanned per chunk), and nothing is
 * buffered beyond the bounds below. One push() does work proportional to its chunk only, so a
 * peer cannot keep the event loop from turning.
 */
export interface MpdReaderEvents {
  /** A text line (without its '\n') and its length in bytes. */
  line(line: string, bytes: number): void;
  binary(chunk: Buffer): void;
  error(err: MpdConnectionError): void;
}

export class MpdLineReader {
  private partial: Buffer[] = [];
  private partialLen = 0;
  /** Bytes of binary payload still to come; 0 = the '\n' after it is next; -1 = text. */
  private binaryLeft = -1;
  private binaryParts: Buffer[] = [];
  private binaryLen = 0;
  private failed = false;

  constructor(
    private readonly events: MpdReaderEvents,
    /** Longest text line accepted (bytes, '\n' excluded); the client lowers it for the greeting. */
    public maxLineBytes: number,
  ) {}

  /** After a `binary: N` line: the next N bytes are payload (the caller checked N). */
  expectBinary(n: number): void {
    this.binaryLeft = n;
    this.binaryParts = [];
    this.binaryLen = 0;
  }

  push(data: Buffer): void {
    let off = 0;
    while (off < data.length && !this.failed) {
      if (this.binaryLeft > 0) {
        const take = Math.min(this.binaryLeft, data.length - off);
        this.binaryParts.push(data.subarray(off, off + take));
        this.binaryLen += take;
        this.binaryLeft -= take;
        off += take;
        continue;
      }
      if (this.binaryLeft === 0) {
        if (data[off] !== 0x0a) return this.fail(new MpdConnectionError('MpdProtocol', 'binary chunk not followed by a newline'));
        off++;
        this.binaryLeft = -1;
        const chunk = Buffer.concat(this.binaryParts, this.binaryLen);
        this.binaryParts = [];
        this.binaryLen = 0;
        this.events.binary(chunk);
        continue;
      }
      const nl = data.indexOf(0x0a, off);
      const end = nl < 0 ? data.length : nl;
      if (this.partialLen + (end - off) > this.maxLineBytes) {
        return this.fail(new MpdConnectionError('MpdTooLarge', `a line over ${this.maxLineBytes} bytes`));
      }
      if (nl < 0) {
        this.partial.push(data.subarray(off));
        this.partialLen += data.length - off;
        return;
      }
      const piece = data.subarray(off, nl);
      const bytes = this.partialLen ? Buffer.concat([...this.partial, piece], this.partialLen + piece.length) : piece;
      this.partial = [];
      this.partialLen = 0;
      off = nl + 1;
      this.events.line(bytes.toString('utf8'), bytes.length);
    }
  }

  /** Stops reading: the rest of the stream is ignored (the caller drops the connection). */
  fail(err: MpdConnectionError): void {
    if (this.failed) return;
    this.failed = true;
    this.partial = [];
    this.binaryParts = [];
    this.events.error(err);
  }

  /** Bytes held for a line or a binary chunk not complete yet. */
  get pending(): number {
    return this.partialLen + this.binaryLen;
  }
}
