/**
 * SlimProto, the Squeezebox control protocol (as Lyrion Music Server speaks it and squeezelite
 * implements it). Player → server frames: 4-byte opcode, 4-byte big-endian body length, body.
 * Server → player frames: 2-byte big-endian length of what follows, 4-byte command, payload.
 * Pure functions only: every read is bounds-checked and a short or oversized frame is an error.
 */

/** Largest player frame body accepted (squeezelite's biggest are RESP/META headers, < 4 KiB). */
export const MAX_FRAME_BODY = 16 * 1024;
/** Largest server frame (the 2-byte length field). */
const MAX_SERVER_FRAME = 0xffff;

export class SlimProtoError extends Error {
  constructor(
    readonly code: 'BadOpcode' | 'FrameTooLarge' | 'ShortFrame' | 'NotHelo',
    message: string,
  ) {
    super(message);
  }
}

export interface Frame {
  opcode: string;
  body: Buffer;
}

/**
 * Splits a player's byte stream into frames, keeping at most one frame's bytes: a length over
 * MAX_FRAME_BODY or an opcode that is not four printable letters throws at once, so a hostile
 * peer cannot make it buffer more.
 */
export class FrameReader {
  private buf: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Frame[] {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    const frames: Frame[] = [];
    for (;;) {
      if (this.buf.length < 8) break;
      const opcode = this.buf.toString('latin1', 0, 4);
      if (!/^[A-Za-z][A-Za-z0-9!_ ]{3}$/.test(opcode)) throw new SlimProtoError('BadOpcode', `not a SlimProto opcode: ${JSON.stringify(opcode)}`);
      const len = this.buf.readUInt32BE(4);
      if (len > MAX_FRAME_BODY) throw new SlimProtoError('FrameTooLarge', `${opcode} frame of ${len} bytes (most ${MAX_FRAME_BODY})`);
      if (this.buf.length < 8 + len) break;
      frames.push({ opcode, body: Buffer.from(this.buf.subarray(8, 8 + len)) });
      this.buf = this.buf.subarray(8 + len);
    }
    if (this.buf.length > 8 + MAX_FRAME_BODY) throw new SlimProtoError('FrameTooLarge', 'frame buffer overflow');
    return frames;
  }
}

/** Squeezebox device ids (HELO) → model names, as LMS names them. */
const DEVICE_MODELS: Record<number, string> = {
  2: 'Squeezebox',
  3: 'Softsqueeze',
  4: 'Squeezebox 2',
  5: 'Transporter',
  6: 'Softsqueeze 3',
  7: 'Squeezebox Receiver',
  8: 'SqueezeSlave',
  9: 'Squeezebox Controller',
  10: 'Squeezebox Boom',
  11: 'SoftBoom',
  12: 'SqueezePlay',
};

export interface Helo {
  deviceId: number;
  revision: number;
  /** 'aa:bb:cc:dd:ee:ff', lower case. */
  mac: string;
  /** A reconnect of a player that was playing (wlan channel list bit 0x4000). */
  reconnect: boolean;
  /** Capabilities (`Model=squeezelite,…,pcm,flc,mp3`): key=value pairs and bare codec names. */
  capabilities: Record<string, string>;
  codecs: string[];
  modelName: string;
  firmware: string;
}

export function parseHelo(body: Buffer): Helo {
  if (body.length < 8) throw new SlimProtoError('ShortFrame', `HELO of ${body.length} bytes (at least 8)`);
  const deviceId = body[0];
  const revision = body[1];
  const mac = [...body.subarray(2, 8)].map((b) => b.toString(16).padStart(2, '0')).join(':');
  const reconnect = body.length >= 26 ? (body.readUInt16BE(24) & 0x4000) !== 0 : false;
  const capabilities: Record<string, string> = {};
  const codecs: string[] = [];
  if (body.length > 36) {
    for (const item of body.toString('utf8', 36, Math.min(body.length, 36 + 2048)).split(',')) {
      const i = item.indexOf('=');
      if (i > 0)
        capabilities[item.slice(0, i).trim()] = item
          .slice(i + 1)
          .trim()
          .slice(0, 200);
      else if (/^[a-z0-9]{2,8}$/i.test(item.trim())) codecs.push(item.trim().toLowerCase());
    }
  }
  const modelName = capabilities.ModelName || DEVICE_MODELS[deviceId] || `Squeezebox (device ${deviceId})`;
  const firmware = capabilities.Firmware || String(revision);
  return { deviceId, revision, mac, reconnect, capabilities, codecs, modelName, firmware };
}

/** A STAT event (`STMt`, `STMs`, …) with the fields the hub uses. */
export interface Stat {
  event: string;
  streamBufferFullness: number;
  bytesReceived: number;
  /** The player's millisecond clock when it sent this (32 bits, wraps). */
  jiffies: number;
  outputBufferFullness: number;
  /** Milliseconds of the current track played. */
  elapsedMs: number;
  /** What the hub sent in `strm t` (echoed by STMt). */
  serverTimestamp: number;
}

/** STAT body: event 4, crlf 1, mas 2, stream buffer size 4 + fullness 4, bytes 8, signal 2, jiffies 4, output size 4 + fullness 4, elapsed s 4, voltage 2, elapsed ms 4, server ts 4, error 2. */
const STAT_MIN = 47;

export function parseStat(body: Buffer): Stat {
  if (body.length < STAT_MIN) throw new SlimProtoError('ShortFrame', `STAT of ${body.length} bytes (at least ${STAT_MIN})`);
  const event = body.toString('latin1', 0, 4);
  return {
    event,
    streamBufferFullness: body.readUInt32BE(11),
    bytesReceived: body.readUInt32BE(15) * 2 ** 32 + body.readUInt32BE(19),
    jiffies: body.readUInt32BE(25),
    outputBufferFullness: body.readUInt32BE(33),
    elapsedMs: body.readUInt32BE(43),
    serverTimestamp: body.length >= 51 ? body.readUInt32BE(47) : 0,
  };
}

/** SETD from the player: id 0 carries its name. */
export function parseSetd(body: Buffer): { id: number; value: string } {
  if (body.length < 1) throw new SlimProtoError('ShortFrame', 'empty SETD');
  return { id: body[0], value: body.toString('utf8', 1, Math.min(body.length, 1 + 256)).replace(/\0.*$/s, '') };
}

// ---- server → player -----------------------------------------------------------------------

export function serverFrame(command: string, payload: Buffer): Buffer {
  const len = 4 + payload.length;
  if (len > MAX_SERVER_FRAME) throw new RangeError(`${command} frame too large`);
  const out = Buffer.alloc(2 + len);
  out.writeUInt16BE(len, 0);
  out.write(command, 2, 4, 'latin1');
  payload.copy(out, 6);
  return out;
}

export type StrmCommand = 's' | 'p' | 'u' | 'q' | 't' | 'f' | 'a';

/** What `strm s` tells the player about the stream it fetches. */
export interface StreamFormat {
  /** 'p' PCM, 'f' FLAC, 'm' MP3. */
  codec: 'p' | 'f' | 'm';
  /** PCM only: '1' 16 bit, '3' 44.1 kHz, '2' stereo, '1' little endian. */
  sampleSize?: string;
  sampleRate?: string;
  channels?: string;
  endian?: string;
}

export interface StrmOptions {
  command: StrmCommand;
  /** 's': '0' wait for `strm u` (buffer, report STMl), '1' start when buffered. */
  autostart?: '0' | '1';
  format?: StreamFormat;
  /** 's': KiB of input buffered before the decoder starts. */
  thresholdKb?: number;
  /** 's': tenths of a second of output buffered before playing (autostart 1). */
  outputThreshold?: number;
  /** 'u': the player's jiffies to start at (0 = now); 'p'/'a': interval ms; 't': server timestamp. */
  value?: number;
  /** 's': HTTP port of the audio server (its address is the control connection's). */
  serverPort?: number;
  /** 's': the HTTP request the player sends. */
  request?: string;
}

/** A `strm` command: 24 fixed bytes, then (for 's') the HTTP request. */
export function strm(o: StrmOptions): Buffer {
  const request = Buffer.from(o.request ?? '', 'latin1');
  const p = Buffer.alloc(24 + request.length);
  const f = o.format;
  p.write(o.command, 0, 'latin1');
  p.write(o.autostart ?? '0', 1, 'latin1');
  p.write(f?.codec ?? 'p', 2, 'latin1');
  p.write(f?.sampleSize ?? '?', 3, 'latin1');
  p.write(f?.sampleRate ?? '?', 4, 'latin1');
  p.write(f?.channels ?? '?', 5, 'latin1');
  p.write(f?.endian ?? '?', 6, 'latin1');
  p[7] = Math.max(0, Math.min(255, o.thresholdKb ?? 0));
  p[8] = 0; // spdif auto
  p[9] = 0; // transition period
  p.write('0', 10, 'latin1'); // no transition
  p[11] = 0; // flags
  p[12] = Math.max(0, Math.min(255, o.outputThreshold ?? 0));
  p[13] = 0; // slaves
  p.writeUInt32BE((o.value ?? 0) >>> 0, 14);
  p.writeUInt16BE(o.serverPort ?? 0, 18);
  p.writeUInt32BE(0, 20); // 0: the control connection's server address
  request.copy(p, 24);
  return serverFrame('strm', p);
}

/** Software gain, 16.16 fixed point (65536 = unity), for the hub's 0–50 volume: 0 is silence, 1–50 spans −50 dB…0 dB. */
export function volumeToGain(volume: number, max = 50): number {
  if (volume <= 0) return 0;
  const db = (Math.min(volume, max) / max - 1) * 50;
  return Math.round(65536 * 10 ** (db / 20));
}

/** `audg`: old gain (0–128, for players of the first generation) and new 16.16 gain, both channels. */
export function audg(volume: number, max = 50): Buffer {
  const gain = volumeToGain(volume, max);
  const old = Math.round((Math.max(0, Math.min(volume, max)) / max) * 128);
  const p = Buffer.alloc(18);
  p.writeUInt32BE(old, 0);
  p.writeUInt32BE(old, 4);
  p[8] = 1; // digital volume control on: apply gainL/gainR
  p[9] = 255; // preamp
  p.writeUInt32BE(gain, 10);
  p.writeUInt32BE(gain, 14);
  return serverFrame('audg', p);
}

/** `aude`: S/PDIF and DAC output on (1) or off (0). */
export function aude(on: boolean): Buffer {
  return serverFrame('aude', Buffer.from([on ? 1 : 0, on ? 1 : 0]));
}

/** `setd` id 0 without a value asks the player for its name (it answers SETD). */
export function setdNameQuery(): Buffer {
  return serverFrame('setd', Buffer.from([0]));
}

/** The discovery answer to a player's 'e' broadcast: 'E' and a NAME TLV. */
export function discoveryReply(name: string): Buffer {
  const n = Buffer.from(name.slice(0, 64), 'utf8');
  return Buffer.concat([Buffer.from('ENAME', 'latin1'), Buffer.from([n.length]), n]);
}
