import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { FrameReader, parseHelo, parseSetd, parseStat, SlimProtoError, type Helo, type Stat } from './protocol';

/** Most bytes queued towards a player that does not read (commands are small; keepalives every 2 s). */
const MAX_WRITE_BACKLOG = 256 * 1024;

export interface ConnectionEvents {
  helo: [helo: Helo];
  stat: [stat: Stat, receivedAt: number];
  name: [name: string];
  /** A protocol fault; the connection is closed. */
  fault: [err: SlimProtoError];
  close: [];
}

/** Hub monotonic milliseconds (sub-ms): what every player clock is mapped onto. */
export function hubMs(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * One player's TCP connection: frames parsed with bounds, HELO required first (within the
 * timeout), then STAT/SETD reported as events; anything malformed closes it.
 */
export class PlayerConnection extends EventEmitter<ConnectionEvents> {
  private readonly reader = new FrameReader();
  private heloTimer?: NodeJS.Timeout;
  helo?: Helo;
  private closed = false;
  /** Hub ms of the last STAT (undefined: none yet). A player answers every `strm t` with one. */
  lastStatAt?: number;

  constructor(
    readonly socket: Socket,
    heloTimeoutMs: number,
  ) {
    super();
    socket.setNoDelay(true);
    this.heloTimer = setTimeout(() => this.fail(new SlimProtoError('NotHelo', `no HELO within ${heloTimeoutMs} ms`)), heloTimeoutMs);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.closed = true;
      clearTimeout(this.heloTimer);
      this.emit('close');
    });
  }

  get remoteAddress(): string {
    return (this.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
  }

  private onData(chunk: Buffer): void {
    if (this.closed) return;
    const at = hubMs();
    try {
      for (const f of this.reader.push(chunk)) {
        if (!this.helo) {
          if (f.opcode !== 'HELO') throw new SlimProtoError('NotHelo', `first frame is ${JSON.stringify(f.opcode)}, not HELO`);
          this.helo = parseHelo(f.body);
          clearTimeout(this.heloTimer);
          this.emit('helo', this.helo);
          continue;
        }
        if (f.opcode === 'STAT') {
          const stat = parseStat(f.body);
          this.lastStatAt = at;
          this.emit('stat', stat, at);
        } else if (f.opcode === 'SETD') {
          const d = parseSetd(f.body);
          if (d.id === 0 && d.value) this.emit('name', d.value);
        } else if (f.opcode === 'HELO') {
          // A player says HELO again after a stream ends; a different MAC on the same connection is not a player.
          const again = parseHelo(f.body);
          if (again.mac !== this.helo.mac) throw new SlimProtoError('NotHelo', `a second HELO changed the MAC (${this.helo.mac} → ${again.mac})`);
          this.helo = again;
        } else if (f.opcode === 'BYE!') this.socket.end();
        // DSCO, RESP, META, IR, BUTN…: nothing the hub needs.
      }
    } catch (e) {
      this.fail(e instanceof SlimProtoError ? e : new SlimProtoError('ShortFrame', (e as Error).message));
    }
  }

  private fail(err: SlimProtoError): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.heloTimer);
    this.emit('fault', err);
    this.socket.destroy();
  }

  get isClosed(): boolean {
    return this.closed || this.socket.destroyed;
  }

  /** Resolves true at the next STAT, false when none comes within ms or the connection closes first. */
  nextStat(ms: number): Promise<boolean> {
    if (this.isClosed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.off('stat', onStat);
        this.off('close', onClose);
        resolve(ok);
      };
      const onStat = () => done(true);
      const onClose = () => done(false);
      const timer = setTimeout(() => done(false), ms);
      this.on('stat', onStat);
      this.on('close', onClose);
    });
  }

  send(frame: Buffer): boolean {
    if (this.closed || this.socket.destroyed) return false;
    if (this.socket.writableLength > MAX_WRITE_BACKLOG) {
      this.fail(new SlimProtoError('FrameTooLarge', 'the player does not read its commands'));
      return false;
    }
    this.socket.write(frame);
    return true;
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.heloTimer);
    this.socket.destroy();
  }
}
