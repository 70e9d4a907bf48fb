import { randomBytes } from 'node:crypto';
import { parsePort } from '../../net/port';
import { b64NoPad, type PayloadCipher } from './crypto';
import { AirPlayError, RtspClient } from './rtsp';
import type { UdpChannels } from './udp';

export interface ReceiverAddress {
  host: string;
  port: number;
  password?: string;
}

/** AirPlay volume: 0 → mute (−144 dB), 1–50 → −30..0 dB. */
export function airplayDb(volume: number): number {
  if (volume <= 0) return -144;
  return -30 + (30 * Math.min(volume, 50)) / 50;
}

/** Most latency (frames, 10 s) believed from a RECORD answer. */
const MAX_AUDIO_LATENCY = 441_000;

/**
 * The receiver's ports from a SETUP answer's Transport header. Every port it names must be a
 * port (1–65535, digits only): a value out of range would make each packet sent to it throw,
 * so such an answer fails the session (AirPlayProtocol) before anything is sent.
 */
export function transportPorts(transport: string): { server_port: number; control_port?: number; timing_port?: number } {
  const out: Record<string, number> = {};
  for (const key of ['server_port', 'control_port', 'timing_port']) {
    const m = new RegExp(`(?:^|;)\\s*${key}=([^;]*)`).exec(transport);
    if (!m) continue;
    const port = parsePort(m[1].trim());
    if (port === undefined) throw new AirPlayError('AirPlayProtocol', `SETUP answer has a bad ${key} '${m[1].slice(0, 20)}'`);
    out[key] = port;
  }
  if (!out.server_port) throw new AirPlayError('AirPlayProtocol', `SETUP answer has no server_port (${transport.slice(0, 120)})`);
  return out as { server_port: number; control_port?: number; timing_port?: number };
}

/**
 * One receiver's RTSP session inside a stream: the handshake (OPTIONS with Apple-Challenge,
 * ANNOUNCE with the SDP, SETUP with our control and timing ports, RECORD at the stream's
 * current sequence and RTP time), then volume, progress, FLUSH and TEARDOWN.
 */
export class RaopSession {
  readonly rtsp: RtspClient;
  private readonly sid = String(randomBytes(4).readUInt32BE(0));
  private uri = '';
  serverPort = 0;
  controlPort = 0;
  /** Receiver's latency (frames) from the RECORD answer, when it says. */
  audioLatency?: number;
  onLost?: (err: Error) => void;
  private closing = false;

  constructor(
    readonly address: ReceiverAddress,
    private readonly udp: UdpChannels,
    timeoutMs: number,
  ) {
    this.rtsp = new RtspClient(address.host, address.port, timeoutMs, address.password);
  }

  async start(cipher: PayloadCipher, record: { seq: number; rtptime: number }, volume: number): Promise<void> {
    await this.rtsp.connect();
    this.rtsp.onClose = (err) => {
      if (!this.closing) this.onLost?.(err ?? new AirPlayError('AirPlayUnreachable', 'connection lost'));
    };
    const local = this.rtsp.localAddress;
    this.uri = `rtsp://${local}/${this.sid}`;
    await this.rtsp.request('OPTIONS', '*', { 'Apple-Challenge': b64NoPad(randomBytes(16)) });
    const sdp = [
      'v=0',
      `o=iTunes ${this.sid} 0 IN IP4 ${local}`,
      's=iTunes',
      `c=IN IP4 ${this.address.host}`,
      't=0 0',
      'm=audio 0 RTP/AVP 96',
      'a=rtpmap:96 AppleLossless',
      'a=fmtp:96 352 0 16 40 10 14 2 255 0 0 44100',
      `a=rsaaeskey:${cipher.wrappedKey()}`,
      `a=aesiv:${b64NoPad(cipher.iv)}`,
      '',
    ].join('\r\n');
    await this.rtsp.request('ANNOUNCE', this.uri, { 'Content-Type': 'application/sdp' }, sdp);
    const setup = await this.rtsp.request('SETUP', this.uri, {
      Transport: `RTP/AVP/UDP;unicast;interleaved=0-1;mode=record;control_port=${this.udp.control.address().port};timing_port=${this.udp.timing.address().port}`,
    });
    const transport = setup.headers.transport ?? '';
    const ports = transportPorts(transport);
    this.serverPort = ports.server_port;
    this.controlPort = ports.control_port ?? 0;
    const session = setup.headers.session;
    if (session) this.rtsp.sessionId = session.split(';')[0];
    await this.setVolume(volume);
    const rec = await this.rtsp.request('RECORD', this.uri, {
      Range: 'npt=0-',
      'RTP-Info': `seq=${record.seq};rtptime=${record.rtptime >>> 0}`,
    });
    const lat = Number(rec.headers['audio-latency']);
    if (Number.isInteger(lat) && lat > 0 && lat <= MAX_AUDIO_LATENCY) this.audioLatency = lat;
  }

  setVolume(volume: number): Promise<unknown> {
    return this.rtsp.request('SET_PARAMETER', this.uri, { 'Content-Type': 'text/parameters' }, `volume: ${airplayDb(volume).toFixed(6)}\r\n`);
  }

  progress(start: number, current: number, end: number): Promise<unknown> {
    return this.rtsp.request(
      'SET_PARAMETER',
      this.uri,
      { 'Content-Type': 'text/parameters' },
      `progress: ${start >>> 0}/${current >>> 0}/${end >>> 0}\r\n`,
    );
  }

  flush(seq: number, rtptime: number): Promise<unknown> {
    return this.rtsp.request('FLUSH', this.uri, { 'RTP-Info': `seq=${seq};rtptime=${rtptime >>> 0}` });
  }

  async teardown(): Promise<void> {
    this.closing = true;
    try {
      if (this.rtsp.open) await this.rtsp.request('TEARDOWN', this.uri);
    } catch {
      // Already gone: nothing left to tear down.
    } finally {
      this.rtsp.close();
    }
  }
}
