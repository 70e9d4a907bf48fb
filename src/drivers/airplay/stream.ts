import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { Logger } from '../../logger';
import { ffmpegInput, startFfmpeg } from '../../audio/ffmpeg';
import { FRAMES_PER_PACKET, alacEscapeFrame } from './alac';
import { PayloadCipher } from './crypto';
import type { AirPlayDuck } from './duck';
import { RaopSession, type ReceiverAddress } from './session';
import { nowMs, writeNtp, type UdpChannels } from './udp';

export const RATE = 44100;
const PCM_BYTES = FRAMES_PER_PACKET * 4;
/** Packets kept for retransmits and for replaying the flushed audio on resume (~4 s). */
const RING = 512;
/**
 * From begin() to the instant the first frame is due to be sent (ms): the receivers' sessions
 * are up by then, and the first sync packet goes ahead of the first audio. A music play keeps
 * the 300 ms it always had; an announcement's stream starts sooner (every ms here is heard).
 */
const START_DELAY_MS = 300;
const SPEECH_START_DELAY_MS = 40;
/**
 * How long after joining a member gets a sync packet after each of its timing requests (ms).
 * shairport-sync ignores a sync packet that comes before its first timing exchange, and takes
 * its reference (when to play the first frame) from the next one: without these it could wait
 * for the once-a-second sync, by when a short latency has passed and it drops the start.
 */
const SYNC_ON_TIMING_MS = 3000;
/**
 * Silent packets sent ahead of the media whenever the clock starts (a stream's start, a resume
 * after FLUSH). shairport-sync plays the first 9 packets after a flush (RECORD flushes too) as
 * silence whatever they hold (player.c, play_number_after_flush < 10): without these, every
 * play and every resume lost its first 72 ms — the first syllable of an announcement. They are
 * due before the media's first frame, so they cost no time.
 */
const PRIME_PACKETS = 10;
/** Longest wait for the decode's first PCM before the clock starts anyway (ms). */
const FIRST_PCM_WAIT_MS = 2000;
/** Frames a receiver adds to the latency in the sync packet when it does not say (RECORD Audio-Latency). */
const NO_AUDIO_LATENCY = 0;

interface Sent {
  seq: number;
  rtp: number;
  /** Media frame index (from the media's start) of the packet's first frame; −1 for a silent PRIME packet. */
  media: number;
  payload: Buffer;
  packet: Buffer;
}

export interface StreamMember {
  session: RaopSession;
  /** nowMs() of the join: timing requests until SYNC_ON_TIMING_MS later are answered with a sync. */
  joinedAt?: number;
  /** Called once the member is lost (receiver gone) — not on a hub-side removal. */
  lost(err: Error): void;
}

export type StreamState = 'starting' | 'playing' | 'paused' | 'ended' | 'stopped';

/**
 * One playback sent to one or more receivers in sync: a single ffmpeg decode, one RTP
 * timeline (sequence numbers, timestamps, one AES key) and the same packets to every member.
 * Frame `rtp` is played by every receiver at anchor.t0 + (rtp − anchor.rtp0)/44100 + latency,
 * which the sync packets tell each receiver against the timing protocol's clock, so members
 * start together, stay together, and a member that joins later is in step from its first frame.
 *
 * The latency a receiver plays at is the sync packet's `current − (current − latency)` plus what
 * the receiver adds itself, which its RECORD answer states as Audio-Latency (shairport-sync:
 * 11025 frames, added to a sync packet flagged 7 as iTunes sends): each member's sync packets
 * carry the latency less its own part, so every receiver plays at exactly `latencyMs`, the
 * figure position(), the end of play and the duck's timers count with.
 *
 * Memory is bounded: ffmpeg's output is read one packet at a time as the pacer needs it (the
 * pipe's back pressure holds ffmpeg), and the ring keeps at most RING packets.
 */
export class AirPlayStream {
  /** The playback (zone) this stream carries (MediaRequest.zone), if the play named one. */
  zone?: string;
  readonly cipher = new PayloadCipher();
  readonly members = new Set<StreamMember>();
  state: StreamState = 'starting';
  private readonly ssrc = randomBytes(4).readUInt32BE(0);
  private seq = randomBytes(2).readUInt16BE(0);
  private rtp = randomBytes(4).readUInt32BE(0);
  private readonly rtpStart = this.rtp;
  private anchor = { t0: 0, rtp0: 0, media0: 0 };
  private ring: Sent[] = [];
  private replay: { media: number; payload: Buffer }[] = [];
  private ffmpeg?: ChildProcess;
  private pcmEnded = false;
  private mediaFrame: number;
  private timer?: NodeJS.Timeout;
  private syncTimer?: NodeJS.Timeout;
  private marker = true;
  private endRtp?: number;
  private readonly latencyFrames: number;
  private readonly startDelayMs: number;
  private leftover: Buffer = Buffer.alloc(0);
  /** The ducked announcement mixed into the PCM from the next packet on, if any (issue 21). */
  private _duck?: AirPlayDuck;
  private mixing = false;
  /** Silent packets still to send before the media (PRIME_PACKETS). */
  private prime = 0;
  /** begin() waits for the decode's first PCM before the clock starts. */
  private clockPending = false;
  /** The decode failed before begin(). */
  private decodeFailure?: string;
  onEnd?: (reason: 'ended' | 'error', detail?: string) => void;

  constructor(
    readonly url: string,
    readonly startAt: number,
    readonly duration: number | undefined,
    private readonly udp: UdpChannels,
    readonly latencyMs: number,
    private readonly log: Logger,
    private readonly ffmpegPath?: string,
    /** An announcement's own stream: it starts sooner (SPEECH_START_DELAY_MS). */
    speech = false,
  ) {
    this.latencyFrames = Math.round((latencyMs / 1000) * RATE);
    this.startDelayMs = speech ? SPEECH_START_DELAY_MS : START_DELAY_MS;
    this.mediaFrame = Math.round(startAt * RATE);
  }

  /** Where the next packet goes: what a joining member's RECORD announces. */
  nextRecord(): { seq: number; rtptime: number } {
    return { seq: this.seq, rtptime: this.rtp };
  }

  /**
   * Starts the decode (once): the driver calls it before the receivers' handshakes, so the
   * decode's start overlaps them. Its output waits in the pipe (back pressure) until begin().
   */
  prepare(): void {
    if (this.ffmpeg || this.state !== 'starting') return;
    const run = startFfmpeg([...ffmpegInput(this.url, this.startAt), '-vn', '-f', 's16le', '-ar', String(RATE), '-ac', '2', 'pipe:1'], {
      ffmpegPath: this.ffmpegPath,
    });
    const proc = run.proc;
    this.ffmpeg = proc;
    let startError = '';
    // A 'readable' listener keeps the pipe in paused mode: without one, Node resumes (and so
    // drops) an unread child stdout when the child exits, losing the last seconds of audio.
    proc.stdout.on('readable', () => undefined);
    proc.stdout.on('end', () => {
      this.pcmEnded = true;
    });
    proc.on('error', (e) => {
      this.pcmEnded = true;
      startError = run.startError(e);
    });
    proc.on('exit', (code) => {
      // pcmEnded waits for stdout's 'end': the pipe may still hold audio after the exit.
      if (code && this.mediaFrame === Math.round(this.startAt * RATE) && this.state !== 'stopped') {
        const why = `the media could not be decoded: ${startError || run.lastLine() || `ffmpeg exit ${code}`}`;
        // Before begin() the play has not started: begin() ends it (its speakers stop with the error).
        if (this.state === 'starting') this.decodeFailure = why;
        else this.finish('error', why);
      }
    });
  }

  /** Starts sending once the first members have their sessions. */
  begin(): void {
    this.prepare();
    const out = this.ffmpeg?.stdout;
    if (this.decodeFailure || !out) return this.finish('error', this.decodeFailure ?? 'the media could not be decoded');
    // The clock starts at the decode's first PCM: a decode slow to start (a loaded machine, a
    // web stream) would otherwise send the first frames late — past a short latency, so the
    // receiver would drop them. The stream plays meanwhile (it can be ducked, paused, joined);
    // nothing is sent until then.
    this.state = 'playing';
    this.clockPending = true;
    const go = () => {
      clearTimeout(wait);
      if (!this.clockPending) return;
      this.clockPending = false;
      if (this.state === 'playing') this.startClock();
    };
    const wait = setTimeout(go, FIRST_PCM_WAIT_MS);
    if (out.readableLength > 0 || this.pcmEnded) go();
    else out.once('readable', go);
  }

  private startClock(): void {
    this.prime = PRIME_PACKETS;
    // The media's first frame is due at t0; the silent packets before it are due earlier (now).
    const rtp0 = (this.rtp + PRIME_PACKETS * FRAMES_PER_PACKET) >>> 0;
    this.anchor = { t0: nowMs() + this.startDelayMs, rtp0, media0: this.mediaFrame };
    this.marker = true;
    this.state = 'playing';
    this.sendSync(true);
    this.syncTimer = setInterval(() => this.sendSync(false), 1000);
    this.timer = setInterval(() => this.pump(), 10);
    this.pump();
  }

  private stopClock(): void {
    clearInterval(this.timer);
    clearInterval(this.syncTimer);
    this.timer = this.syncTimer = undefined;
  }

  /** RTP time due to be sent at wall time `ms`. */
  private rtpDueAt(ms: number): number {
    return this.anchor.rtp0 + Math.floor(((ms - this.anchor.t0) / 1000) * RATE);
  }

  private sendSync(first: boolean, only?: StreamMember): void {
    if (this.state !== 'playing' || this.clockPending) return;
    const now = nowMs();
    const current = (this.rtpDueAt(now) >>> 0) as number;
    for (const m of only ? [only] : this.members) {
      if (!m.session.controlPort) continue;
      // The receiver adds its own part (Audio-Latency) to what the packet says: it is left out here.
      const own = m.session.audioLatency ?? NO_AUDIO_LATENCY;
      const latency = Math.max(0, this.latencyFrames - own);
      const pkt = Buffer.alloc(20);
      pkt[0] = first ? 0x90 : 0x80;
      pkt[1] = 0xd4;
      pkt.writeUInt16BE(7, 2);
      pkt.writeUInt32BE((current - latency) >>> 0, 4);
      writeNtp(pkt, 8, now);
      pkt.writeUInt32BE(current >>> 0, 16);
      this.udp.send(pkt, m.session.controlPort, m.session.address.host);
    }
  }

  /**
   * The hub just answered a timing request from `host`: a member there that joined lately gets
   * a sync packet now, so its reference comes right after its clock (see SYNC_ON_TIMING_MS).
   */
  timingAnswered(host: string): void {
    if (this.state !== 'playing') return;
    const now = nowMs();
    for (const m of this.members) {
      if (m.session.address.host === host && m.joinedAt !== undefined && now - m.joinedAt < SYNC_ON_TIMING_MS) this.sendSync(false, m);
    }
  }

  /** Sends every packet that is due; reads ffmpeg only for those (bounded buffering). */
  private pump(): void {
    if (this.state !== 'playing') return;
    const due = this.rtpDueAt(nowMs());
    while (this.endRtp === undefined && ((this.rtp - due) | 0) <= 0) {
      const next = this.nextPayload();
      if (!next) break;
      this.sendPacket(next.payload, next.media);
    }
    if (this.endRtp === undefined && this.pcmEnded && !this.prime && !this.replay.length && this.readable() === 0) {
      this.endRtp = this.rtp;
    }
    if (this.endRtp !== undefined) {
      // Ended once the last frame has been heard (the receivers play latencyMs behind).
      const heardRtp = this.rtpDueAt(nowMs() - this.latencyMs);
      if (((heardRtp - this.endRtp) | 0) >= 0) this.finish('ended');
    }
  }

  private readable(): number {
    const s = this.ffmpeg?.stdout;
    return (s?.readableLength ?? 0) + this.leftover.length;
  }

  private nextPayload(): { payload: Buffer; media: number } | undefined {
    if (this.prime > 0) {
      this.prime--;
      return { payload: this.cipher.encrypt(alacEscapeFrame(Buffer.alloc(PCM_BYTES))), media: -1 };
    }
    const r = this.replay.shift();
    if (r) return r;
    const s = this.ffmpeg?.stdout;
    if (!s) return undefined;
    let pcm: Buffer | null = this.leftover.length ? this.leftover : null;
    this.leftover = Buffer.alloc(0);
    if (!pcm || pcm.length < PCM_BYTES) {
      const more = s.read(PCM_BYTES - (pcm?.length ?? 0)) as Buffer | null;
      if (more) pcm = pcm ? Buffer.concat([pcm, more]) : more;
      else if (this.pcmEnded || s.readableEnded) {
        const rest = s.read() as Buffer | null;
        if (rest) pcm = pcm ? Buffer.concat([pcm, rest]) : rest;
      }
    }
    if (!pcm || !pcm.length) return undefined;
    if (pcm.length < PCM_BYTES) {
      if (!this.pcmEnded && !s.readableEnded) {
        this.leftover = pcm;
        return undefined;
      }
      const padded = Buffer.alloc(PCM_BYTES);
      pcm.copy(padded);
      pcm = padded;
    }
    // The mix goes into the PCM before it is encoded: every member gets it on the same frame,
    // and the music's frames (and so its position) are the same as without it.
    if (this.mixing && this._duck) pcm = this._duck.mixer.process(pcm);
    const media = this.mediaFrame;
    this.mediaFrame += FRAMES_PER_PACKET;
    return { payload: this.cipher.encrypt(alacEscapeFrame(pcm)), media };
  }

  private sendPacket(payload: Buffer, media: number): void {
    const packet = Buffer.alloc(12 + payload.length);
    packet[0] = 0x80;
    packet[1] = this.marker ? 0xe0 : 0x60;
    this.marker = false;
    packet.writeUInt16BE(this.seq, 2);
    packet.writeUInt32BE(this.rtp >>> 0, 4);
    packet.writeUInt32BE(this.ssrc, 8);
    payload.copy(packet, 12);
    for (const m of this.members) {
      if (m.session.serverPort) this.udp.send(packet, m.session.serverPort, m.session.address.host);
    }
    this.ring.push({ seq: this.seq, rtp: this.rtp, media, payload, packet });
    if (this.ring.length > RING) this.ring.shift();
    this.seq = (this.seq + 1) & 0xffff;
    this.rtp = (this.rtp + FRAMES_PER_PACKET) >>> 0;
  }

  /** The ducked announcement under way (its music not yet heard back at full level). */
  get duck(): AirPlayDuck | undefined {
    return this._duck;
  }

  /**
   * Mixes `d` into the music from the next packet to be sent (a duck already under way is
   * replaced; d's mixer starts from that one's gain). When the music is back at full level in
   * the packets sent, the receivers hear it latencyMs later: then d.onOver.
   */
  beginDuck(d: AirPlayDuck): void {
    const prev = this._duck;
    prev?.stop();
    this._duck = d;
    this.mixing = true;
    d.mixer.onDone = () => {
      if (this._duck !== d) return;
      this.mixing = false;
      d.ending = setTimeout(() => {
        if (this._duck !== d) return;
        this._duck = undefined;
        d.over();
        d.stop();
        d.onOver?.();
      }, this.latencyMs);
    };
  }

  /** RetransmitSource for the UDP control channel. */
  packet(seq: number): Buffer | undefined {
    for (let i = this.ring.length - 1; i >= 0; i--) if (this.ring[i].seq === seq) return this.ring[i].packet;
    return undefined;
  }

  /** Seconds into the media the listener hears now (receivers play latencyMs behind). */
  position(): number {
    if (this.state === 'paused' || this.state === 'ended' || this.state === 'stopped') return this.heldPosition / RATE;
    const heard = Math.max(0, ((nowMs() - this.anchor.t0 - this.latencyMs) / 1000) * RATE);
    const sent = this.mediaFrame;
    return Math.min(this.anchor.media0 + heard, sent) / RATE;
  }
  private heldPosition = 0;

  /** Adds a member: it plays in step with the others from the next packet (joins in sync). */
  async join(address: ReceiverAddress, volume: number, member: Omit<StreamMember, 'session'>, timeoutMs: number): Promise<StreamMember> {
    const session = new RaopSession(address, this.udp, timeoutMs);
    const m: StreamMember = { session, lost: member.lost, joinedAt: nowMs() };
    session.onLost = (err) => {
      if (!this.members.has(m)) return;
      this.remove(m, false);
      m.lost(err);
    };
    try {
      await session.start(this.cipher, this.nextRecord(), volume);
    } catch (e) {
      session.rtsp.close();
      throw e;
    }
    if (this.state === 'stopped' || this.state === 'ended') {
      await session.teardown();
      throw new Error('the playback ended before the receiver joined');
    }
    this.members.add(m);
    this.udp.register(address.host, session.controlPort, this);
    this.sendSync(true, m);
    if (this.duration) {
      const start = this.rtpStart;
      session.progress(start, this.rtp, start + Math.round(this.duration * RATE)).catch(() => undefined);
    }
    return m;
  }

  /** Takes a member out (the others play on); the last one out stops the stream. */
  remove(m: StreamMember, teardown = true): Promise<void> {
    if (!this.members.delete(m)) return Promise.resolve();
    this.udp.unregister(m.session.address.host, m.session.controlPort);
    const done = teardown ? m.session.teardown() : Promise.resolve(m.session.rtsp.close());
    if (!this.members.size) this.stop();
    return done;
  }

  /** Pause: the receivers flush what they hold; what they had not played yet is replayed on resume. */
  async pause(): Promise<void> {
    if (this.state !== 'playing') return;
    // Paused before its first PCM: the clock starts on resume.
    this.clockPending = false;
    const heardRtp = this.rtpDueAt(nowMs() - this.latencyMs);
    this.stopClock();
    this.state = 'paused';
    const unplayed = this.ring.filter((p) => p.media >= 0 && ((p.rtp - heardRtp) | 0) >= 0);
    this.replay = [...unplayed.map((p) => ({ media: p.media, payload: p.payload })), ...this.replay];
    this.heldPosition = unplayed[0]?.media ?? this.mediaFrame;
    this.endRtp = undefined;
    const rec = this.nextRecord();
    await Promise.allSettled([...this.members].map((m) => m.session.flush(rec.seq, rec.rtptime)));
  }

  resume(): void {
    if (this.state !== 'paused') return;
    const first = this.replay[0]?.media ?? this.mediaFrame;
    this.startClock();
    this.anchor.media0 = first;
  }

  stop(): void {
    if (this.state === 'stopped' || this.state === 'ended') return;
    this.heldPosition = Math.round(this.position() * RATE);
    this.state = 'stopped';
    this.teardownAll();
  }

  private finish(reason: 'ended' | 'error', detail?: string): void {
    if (this.state === 'stopped' || this.state === 'ended') return;
    this.heldPosition = this.mediaFrame;
    this.state = 'ended';
    this.log.debug({ reason, detail, frames: this.mediaFrame, sentMs: Math.round(nowMs() - this.anchor.t0) }, 'airplay stream finished');
    this.teardownAll();
    this.onEnd?.(reason, detail);
  }

  private teardownAll(): void {
    this.stopClock();
    this._duck?.stop();
    this._duck = undefined;
    this.mixing = false;
    this.ffmpeg?.kill('SIGKILL');
    this.ffmpeg?.stdout?.destroy();
    this.replay = [];
    this.ring = [];
    for (const m of this.members) {
      this.udp.unregister(m.session.address.host, m.session.controlPort);
      void m.session.teardown();
    }
    this.members.clear();
  }
}
