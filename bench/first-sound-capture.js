'use strict';
/**
 * Captures for bench/first-sound.js: when a speaker's first audible sample after a mark came out,
 * on the monotonic clock (process.hrtime, the clock squeezelite's pacer and snapclient's read
 * stamps use), so it can be set against the instant a REST request was sent.
 *
 * GrowthCapture is for peers that write what they play to a file at real time without a clock
 * of their own (mpd's `ffmpeg -re` pipe output, gmediarender's synced filesink): the file's size is polled every 2 ms and each growth stamped; a sample at
 * byte b came out when the chunk holding it was written plus its place in that chunk (the way
 * test/drivers/airplay/skew.ts times shairport-sync, where only differences between receivers
 * count). shairport-sync writes ahead of time, so its absolute timing is DacCapture's. Error: the poll interval plus this process's
 * event-loop lag late, the writer's chunk granularity (ffmpeg -re: ~23 ms packets) early/late.
 */
const { closeSync, openSync, readSync, statSync } = require('node:fs');

const monoMs = () => Number(process.hrtime.bigint()) / 1e6;

function sizeOf(file) {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

function readBytes(file, from, to) {
  const len = Math.max(0, to - from);
  const buf = Buffer.alloc(len);
  if (!len) return buf;
  let fd;
  try {
    fd = openSync(file, 'r');
  } catch {
    return Buffer.alloc(0); // not written yet
  }
  try {
    const n = readSync(fd, buf, 0, len, from);
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

class GrowthCapture {
  /**
   * @param file the growing capture
   * @param format { wav: true } for a WAV whose header gives the format (gmediarender's wavenc,
   *   rewritten from byte 0 when its pipeline restarts), else { rate, channels } of raw s16le.
   */
  constructor(file, format) {
    this.file = file;
    this.format = format;
    this.resets = 0;
    this.log = [{ t: monoMs(), size: sizeOf(file) }];
    this.timer = setInterval(() => this.poll(), 2);
  }
  poll() {
    const size = sizeOf(this.file);
    const last = this.log[this.log.length - 1];
    if (size === last.size) return;
    if (size < last.size) {
      // The writer truncated the file (a new pipeline): start the log over.
      this.resets++;
      this.log = [{ t: monoMs(), size: 0 }];
      if (size === 0) return;
    }
    this.log.push({ t: monoMs(), size });
    if (this.log.length > 20000) this.log.splice(0, 10000);
  }
  layout() {
    if (!this.format.wav) return { header: 0, rate: this.format.rate, frame: 2 * this.format.channels };
    const head = readBytes(this.file, 0, 44);
    if (head.length < 44 || head.toString('latin1', 0, 4) !== 'RIFF') return undefined;
    return { header: 44, rate: head.readUInt32LE(24), frame: 2 * head.readUInt16LE(22) };
  }
  mark() {
    return { size: this.log[this.log.length - 1].size, resets: this.resets };
  }
  /** Monotonic ms at which byte `b` came out, or undefined before the poller saw it. */
  timeOf(b, bytesPerMs) {
    for (let i = 1; i < this.log.length; i++) {
      if (this.log[i].size > b) return this.log[i].t + Math.max(0, b - this.log[i - 1].size) / bytesPerMs;
    }
    return undefined;
  }
  /** First sample at or above `threshold` (left channel) written after the mark: its output instant, or undefined. */
  onset(mark, threshold) {
    const l = this.layout();
    if (!l) return undefined;
    let from = mark.resets === this.resets ? mark.size : 0;
    from = Math.max(from, l.header);
    from -= (from - l.header) % l.frame;
    const end = this.log[this.log.length - 1].size;
    const buf = readBytes(this.file, from, end);
    for (let o = 0; o + 2 <= buf.length; o += l.frame) {
      if (Math.abs(buf.readInt16LE(o)) >= threshold) return this.timeOf(from + o, (l.rate * l.frame) / 1000);
    }
    return undefined;
  }
  /** Nothing written for `ms`, or nothing audible in the last `ms` of what was. */
  quiet(threshold, ms = 300) {
    const last = this.log[this.log.length - 1];
    if (monoMs() - last.t >= ms) return true;
    const l = this.layout();
    if (!l) return true;
    const from = Math.max(l.header, last.size - Math.round((l.rate * l.frame * ms) / 1000));
    const buf = readBytes(this.file, from - ((from - l.header) % l.frame), last.size);
    for (let o = 0; o + 2 <= buf.length; o += l.frame) if (Math.abs(buf.readInt16LE(o)) >= threshold) return false;
    return true;
  }
  close() {
    clearInterval(this.timer);
  }
}

/**
 * shairport-sync's stdout back end (AirPlay): it has no clock of its own and writes ahead of
 * time — a session's lead-in silence (up to the first frame's due instant) at once, then each
 * frame as soon as it may (up to 1 s before it is due: its audio_backend_buffer_desired_length).
 * So the write instant of a byte says little; its place in the session's sample timeline says
 * when a sound card fed from that pipe would play it. This capture models that card: it starts
 * at a session's first byte and plays one frame every 1/rate s, so byte b is heard at
 * start.t + (b − start.size)/bytesPerMs. A session starts at the first write after a mark (the
 * run's request: the speaker is quiet and idle then, and every play is a new RAOP session), and
 * again at a write that comes after the card would have played it (an underrun: a session
 * ended, the next one started). Error: the 2 ms poll plus this process's event-loop lag late.
 */
class DacCapture {
  constructor(file, rate = 44100, channels = 2) {
    this.file = file;
    this.bytesPerMs = (rate * 2 * channels) / 1000;
    this.frame = 2 * channels;
    this.size = sizeOf(file);
    this.lastWrite = monoMs();
    /** Session starts: { t, size }; bounded. */
    this.starts = [{ t: monoMs(), size: this.size }];
    this.marked = false;
    this.timer = setInterval(() => this.poll(), 2);
  }
  poll() {
    const size = sizeOf(this.file);
    if (size <= this.size) return;
    const t = monoMs();
    const s = this.starts[this.starts.length - 1];
    // The first write after a mark, or one later than the card would have played it: a session starts.
    if (this.marked || t > s.t + (this.size - s.size) / this.bytesPerMs + 20) {
      this.starts.push({ t, size: this.size });
      if (this.starts.length > 2000) this.starts.splice(0, 1000);
      this.marked = false;
    }
    this.size = size;
    this.lastWrite = t;
  }
  mark() {
    this.marked = true;
    return this.size;
  }
  heardAt(b) {
    for (let i = this.starts.length - 1; i >= 0; i--) {
      const s = this.starts[i];
      if (s.size <= b) return s.t + (b - s.size) / this.bytesPerMs;
    }
    return undefined;
  }
  onset(mark, threshold) {
    const from = mark - (mark % this.frame);
    const buf = readBytes(this.file, from, this.size);
    for (let o = 0; o + 2 <= buf.length; o += this.frame) {
      if (Math.abs(buf.readInt16LE(o)) >= threshold) return this.heardAt(from + o);
    }
    return undefined;
  }
  /** Nothing written for `ms` (the session is over) and nothing audible in the last `ms` of it. */
  quiet(threshold, ms = 300) {
    if (monoMs() - this.lastWrite < ms) return false;
    const to = this.size - (this.size % this.frame);
    const from = Math.max(0, to - Math.round(this.bytesPerMs * ms));
    const buf = readBytes(this.file, from - (from % this.frame), to);
    for (let o = 0; o + 2 <= buf.length; o += this.frame) if (Math.abs(buf.readInt16LE(o)) >= threshold) return false;
    return true;
  }
  close() {
    clearInterval(this.timer);
  }
}

/** The paced squeezelite player of bench/squeezebox.js: its pacer is the sound card, byte → heard time exactly. */
class PacedCapture {
  constructor(player, rate) {
    this.player = player;
    this.rate = rate;
  }
  mark() {
    return this.player.size();
  }
  onset(mark, threshold) {
    const { start, s } = this.player.samples(mark);
    for (let i = 0; i < s.length; i++) if (Math.abs(s[i]) >= threshold) return this.player.heardAt(start + i * 8);
    return undefined;
  }
  quiet(threshold, ms = 300) {
    const bytes = Math.round((this.rate * 8 * ms) / 1000);
    const size = this.player.size();
    if (size < bytes) return true;
    return this.player.samples(size - bytes).s.every((x) => Math.abs(x) < threshold);
  }
  close() {}
}

/** A snapclient's read-stamped stdout (test/party/stamped-capture.ts). */
class SnapCapture {
  constructor(stamped) {
    this.cap = stamped;
  }
  mark() {
    return this.cap.frames;
  }
  onset(mark, threshold) {
    const f = this.cap.firstLoud(mark, threshold);
    // Half a second past the onset: read stamps on both sides of its block pin its write instant.
    if (f < 0 || this.cap.frames - f < 24_000) return undefined;
    return this.cap.outputMs(f);
  }
  quiet(threshold) {
    const c = this.cap;
    return c.frames > 14_400 && c.firstLoud(c.frames - 14_400, threshold) < 0;
  }
  close() {}
}

/** The virtual family: no audio, the timing model ends at the speaker's first fetch of the clip. */
class FetchCapture {
  constructor() {
    this.fetches = [];
    this.real = globalThis.fetch;
    globalThis.fetch = (url, init) => {
      // Media only (the hub's media server or the floor's clip server), not REST calls.
      if (/\/media\/|\/first-sound-clip/.test(String(url))) this.fetches.push(monoMs());
      if (this.fetches.length > 1000) this.fetches.splice(0, 500);
      return this.real(url, init);
    };
  }
  mark() {
    return { n: this.fetches.length, t: monoMs() };
  }
  onset(mark) {
    return this.fetches.find((t) => t >= mark.t);
  }
  quiet() {
    return true;
  }
  close() {
    globalThis.fetch = this.real;
  }
}

module.exports = { DacCapture, GrowthCapture, PacedCapture, SnapCapture, FetchCapture, monoMs, sizeOf };
