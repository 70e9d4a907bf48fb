import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LAB_NETWORKS } from '../../helpers/lab-networks';
import { eventually } from '../../helpers/wait';
import { toneAmplitude } from '../../helpers/audio';

/**
 * Real shairport-sync receivers, each in its own network namespace `ap-<pid>-N` with its own
 * dbus-daemon and avahi-daemon (tmpfs /run mounts private to the namespace), on a bridge
 * `apb<pid>` in the root namespace that only the test's veths join: mDNS stays on that bridge.
 * Each receiver writes what it plays (s16le 44.1 kHz stereo) to its own out.raw.
 */
export interface Receiver {
  index: number;
  name: string;
  ns: string;
  host: string;
  port: number;
  out: string;
  proc?: ChildProcess;
  log: () => string;
}

export function canRunReceivers(): boolean {
  try {
    execFileSync(
      'sh',
      ['-c', 'command -v shairport-sync && command -v avahi-daemon && command -v dbus-daemon && command -v ffmpeg && ip netns list'],
      { stdio: 'ignore' },
    );
    return process.getuid?.() === 0;
  } catch {
    return false;
  }
}

export class ReceiverLab {
  readonly dir = mkdtempSync(join(tmpdir(), 'ap-lab-'));
  readonly bridge = `apb${process.pid % 1_000_000}`;
  readonly subnet = `${LAB_NETWORKS.airplay.subnet}.${process.pid % 250}`;
  readonly hubAddress = `${this.subnet}.1`;
  readonly receivers: Receiver[] = [];

  constructor() {
    this.sh(`ip link add ${this.bridge} type bridge && ip addr add ${this.hubAddress}/24 dev ${this.bridge} && ip link set ${this.bridge} up`);
  }

  /** Starts receiver N (1-based) and waits until it listens. */
  async add(options: { name?: string; password?: string; interruptible?: boolean } = {}): Promise<Receiver> {
    const index = this.receivers.length + 1;
    const ns = `${LAB_NETWORKS.airplay.prefix}-${process.pid}-${index}`;
    const veth = `apv${process.pid % 1_000_000}n${index}`;
    const host = `${this.subnet}.${10 + index}`;
    this.sh(
      [
        `ip netns add ${ns}`,
        `ip link add ${veth} type veth peer name ${veth}p`,
        `ip link set ${veth} master ${this.bridge} up`,
        `ip link set ${veth}p netns ${ns}`,
        `ip -n ${ns} link set ${veth}p name eth0`,
        `ip -n ${ns} addr add ${host}/24 dev eth0`,
        `ip -n ${ns} link set eth0 up`,
        `ip -n ${ns} link set lo up`,
      ].join(' && '),
    );
    const r: Receiver = {
      index,
      name: options.name ?? `Room ${index}`,
      ns,
      host,
      port: 5000,
      out: join(this.dir, `out-${index}.raw`),
      log: () => safeRead(join(this.dir, `log-${index}.txt`)),
    };
    this.receivers.push(r);
    this.writeConfig(r, options);
    await this.startReceiver(r);
    return r;
  }

  private writeConfig(r: Receiver, options: { password?: string; interruptible?: boolean }): void {
    const conf = [
      'general = {',
      `  name = "${r.name}";`,
      '  port = 5000;',
      '  output_backend = "stdout";',
      // AirPlay's −30..0 dB onto 30 dB of attenuation: the captured level is the dB the hub asked for.
      '  volume_range_db = 30;',
      options.password ? `  password = "${options.password}";` : '',
      '};',
      'sessioncontrol = {',
      `  allow_session_interruption = "${options.interruptible === false ? 'no' : 'yes'}";`,
      '  session_timeout = 20;',
      '};',
      '',
    ].join('\n');
    writeFileSync(join(this.dir, `shairport-${r.index}.conf`), conf);
    // A host name of its own, as real receivers have: the namespaces share this machine's name,
    // and two daemons claiming it on one bridge go through conflict renaming while they publish.
    writeFileSync(
      join(this.dir, `avahi-${r.index}.conf`),
      `[server]\nhost-name=shlab-receiver-${r.index}\nuse-ipv6=no\nallow-interfaces=eth0\n[publish]\npublish-workstation=no\n`,
    );
    writeFileSync(
      join(this.dir, `run-${r.index}.sh`),
      [
        'set -e',
        'mkdir -p /run/dbus /run/avahi-daemon',
        'mount -t tmpfs none /run/dbus',
        'mount -t tmpfs none /run/avahi-daemon',
        'dbus-daemon --system --fork --nopidfile',
        `avahi-daemon -f ${join(this.dir, `avahi-${r.index}.conf`)} --no-drop-root --no-chroot -D`,
        'sleep 0.3',
        `exec shairport-sync -c ${join(this.dir, `shairport-${r.index}.conf`)} -v >> ${r.out} 2>> ${join(this.dir, `log-${r.index}.txt`)}`,
        '',
      ].join('\n'),
    );
  }

  /** (Re)starts the receiver process in its namespace; waits for its RTSP port. */
  async startReceiver(r: Receiver): Promise<void> {
    // A restart needs fresh daemons: the old ones died with the namespace's processes.
    this.killNamespaceProcesses(r.ns);
    r.proc = spawn('ip', ['netns', 'exec', r.ns, 'unshare', '-m', 'bash', join(this.dir, `run-${r.index}.sh`)], { stdio: 'ignore' });
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      try {
        execFileSync('ip', ['netns', 'exec', r.ns, 'sh', '-c', "ss -ltn | grep -q ':5000 '"], { stdio: 'ignore' });
        return;
      } catch {
        await new Promise((res) => setTimeout(res, 200));
      }
    }
    throw new Error(`shairport-sync ${r.name} did not listen: ${r.log().slice(-2000)}`);
  }

  /** Kills the receiver (and its daemons), as a power cut would. */
  kill(r: Receiver): void {
    this.killNamespaceProcesses(r.ns);
  }

  private killNamespaceProcesses(ns: string): void {
    let pids: string[] = [];
    try {
      pids = execFileSync('ip', ['netns', 'pids', ns]).toString().split(/\s+/).filter(Boolean);
    } catch {
      return;
    }
    for (const pid of pids) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }

  /** Bytes captured so far (s16le stereo). */
  captured(r: Receiver): Buffer {
    try {
      return readFileSync(r.out);
    } catch {
      return Buffer.alloc(0);
    }
  }
  capturedBytes(r: Receiver): number {
    try {
      return statSync(r.out).size;
    } catch {
      return 0;
    }
  }

  close(): void {
    for (const r of this.receivers) {
      this.killNamespaceProcesses(r.ns);
      try {
        execFileSync('ip', ['netns', 'del', r.ns], { stdio: 'ignore' });
      } catch {
        // not there
      }
    }
    try {
      execFileSync('ip', ['link', 'del', this.bridge], { stdio: 'ignore' });
    } catch {
      // not there
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  private sh(cmd: string): void {
    execFileSync('sh', ['-c', cmd], { stdio: ['ignore', 'ignore', 'pipe'] });
  }
}

function safeRead(p: string): string {
  try {
    return readFileSync(p, 'utf8');
  } catch {
    return '';
  }
}

/** RMS (0–1) and the strongest of `freqs` (Goertzel) in the left channel of s16le stereo. */
export function analyse(pcm: Buffer, freqs: number[]): { rms: number; power: Record<number, number> } {
  const n = Math.floor(pcm.length / 4);
  let sum = 0;
  const x = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    x[i] = pcm.readInt16LE(i * 4) / 32768;
    sum += x[i] * x[i];
  }
  const power: Record<number, number> = {};
  for (const f of freqs) power[f] = toneAmplitude(x, 44100, f);
  return { rms: Math.sqrt(sum / (n || 1)), power };
}

/** Only the non-silent part (receivers write silence around a play). */
export function audible(pcm: Buffer, threshold = 200): Buffer {
  let first = -1;
  let last = -1;
  for (let i = 0; i + 1 < pcm.length; i += 2) {
    if (Math.abs(pcm.readInt16LE(i)) > threshold) {
      if (first < 0) first = i;
      last = i;
    }
  }
  if (first < 0) return Buffer.alloc(0);
  const start = first - (first % 4);
  return pcm.subarray(start, last + 2 - ((last + 2 - start) % 4));
}

/** Waits for a condition, polling (test/helpers/wait's eventually, this family's argument order). */
export const until = (what: string, fn: () => boolean | Promise<boolean>, timeoutMs = 20_000) =>
  eventually(fn, timeoutMs, what, 100).then(() => undefined);

/** 20 ms of s16le stereo at 44.1 kHz. */
const W20 = 882 * 4;

/**
 * Issue 30's "no loud burst before the voice", measured on a capture (s16le stereo): its 20 ms
 * windows, the voice's onset (the first window whose voiceHz amplitude is a tenth of its peak
 * and above musicHz's) and the loudest window (RMS) in the second before it — what a listener
 * heard just before the voice, to compare with the music's level before the announcement.
 */
export function beforeVoice(pcm: Buffer, voiceHz: number, musicHz: number): { onset: number; loudest: number; windows: { rms: number }[] } {
  const windows: { rms: number; voice: number; music: number }[] = [];
  for (let o = 0; o + W20 <= pcm.length; o += W20) {
    const a = analyse(pcm.subarray(o, o + W20), [voiceHz, musicHz]);
    windows.push({ rms: a.rms, voice: a.power[voiceHz], music: a.power[musicHz] });
  }
  const peak = Math.max(0, ...windows.map((w) => w.voice));
  const onset = windows.findIndex((w) => w.voice > peak * 0.1 && w.voice > w.music);
  const last = windows.slice(Math.max(0, onset - 50), Math.max(0, onset));
  return { onset, loudest: Math.max(0, ...last.map((w) => w.rms)), windows };
}
