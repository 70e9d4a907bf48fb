import type { ChildProcess } from 'node:child_process';
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { upnpDeviceId } from '../../src/drivers/upnp/renderer';
import { LAB_NETWORKS } from '../helpers/lab-networks';
import { Lan, LAN_IFNAME } from '../drivers/upnp/lan';
import { terminate } from '../drivers/upnp/processes';

/**
 * The party lab's one UPnP renderer: a real gmediarender in a network namespace of its own
 * LAN (libupnp will not serve on loopback), recording what it plays to a WAV. The hub runs in
 * the test process and reaches it through the LAN's root veth (static renderer URL, no SSDP).
 */
export const PARTY_LAN = LAB_NETWORKS.party;
const RENDERER_PORT = 49494;
const UUID = '5eaca4e2-0b1d-4c3e-9a7f-0000000000a1';

export class PartyRenderer {
  readonly deviceId = upnpDeviceId(`uuid:${UUID}`);
  private proc?: ChildProcess;
  private out = '';

  private constructor(
    readonly lan: Lan,
    readonly recording: string,
    private readonly logFile: string,
  ) {}

  /** Builds the LAN (cleaning up a crashed run's leftovers first) and starts the renderer. */
  static async start(dir: string): Promise<PartyRenderer> {
    const lan = await Lan.create({ prefix: PARTY_LAN.prefix, subnet: PARTY_LAN.subnet, hosts: ['r1'] });
    const r = new PartyRenderer(lan, join(dir, 'r1.wav'), join(dir, 'r1.log'));
    try {
      await r.run();
    } catch (e) {
      await lan.destroy();
      throw e;
    }
    return r;
  }

  get location(): string {
    return `http://${this.lan.host('r1').address}:${RENDERER_PORT}/description.xml`;
  }

  private async run(): Promise<void> {
    // Both branches synced to the clock, as in the UPnP lab: the WAV grows at real time.
    const sink = `audioconvert ! audio/x-raw,format=S16LE ! tee name=t ! queue ! audioresample ! fakesink sync=true t. ! queue ! wavenc ! filesink sync=true location=${this.recording}`;
    const proc = this.lan.spawn('r1', 'gmediarender', [
      '-f',
      'Party Renderer',
      '-u',
      UUID,
      '-I',
      LAN_IFNAME,
      '-p',
      String(RENDERER_PORT),
      '--gstout-audiopipe',
      sink,
      '--logfile',
      this.logFile,
    ]);
    this.proc = proc;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`gmediarender did not start: ${this.out}`)), 15000);
      const onData = (d: Buffer) => {
        this.out = (this.out + d.toString()).slice(-4000);
        if (this.out.includes('Ready for rendering')) {
          clearTimeout(timer);
          resolve();
        }
      };
      proc.stdout?.on('data', onData);
      proc.stderr?.on('data', onData);
      proc.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`gmediarender exited (${code}): ${this.out}`));
      });
    });
  }

  async destroy(): Promise<void> {
    if (this.proc) await terminate(this.proc, 'SIGTERM');
    await this.lan.destroy();
  }
}

/** A WAV that is still being written (wavenc fills in its sizes only at the end): format from the header, samples from byte 44 on. */
export function wavFormat(file: string): { channels: number; rate: number } | undefined {
  const head = readBytes(file, 0, 44);
  if (head.length < 44 || head.toString('latin1', 0, 4) !== 'RIFF') return undefined;
  return { channels: head.readUInt16LE(22), rate: head.readUInt32LE(24) };
}

export function size(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

function readBytes(file: string, from: number, length: number): Buffer {
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(length);
    const n = readSync(fd, buf, 0, length, from);
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

/** First-channel samples of a growing WAV from byte `from` (44 at the least) to its end. */
export function wavSamplesFrom(file: string, from: number): { samples: Int16Array; rate: number } {
  const fmt = wavFormat(file);
  if (!fmt) return { samples: new Int16Array(0), rate: 0 };
  const frame = 2 * fmt.channels;
  const start = Math.max(44, from - ((from - 44) % frame));
  const end = size(file);
  const len = end - start - ((end - start) % frame);
  if (len <= 0) return { samples: new Int16Array(0), rate: fmt.rate };
  const buf = readBytes(file, start, len);
  const out = new Int16Array(len / frame);
  for (let i = 0; i < out.length; i++) out[i] = buf.readInt16LE(i * frame);
  return { samples: out, rate: fmt.rate };
}

/** Loudest 50 ms RMS and the frequency (zero crossings) of the last `seconds` of a sample run. */
export function analyse(samples: Int16Array, rate: number, seconds = 0.5): { level: number; hz: number } {
  const win = Math.max(1, Math.round(rate * 0.05));
  let level = 0;
  for (let i = 0; i + win <= samples.length; i += win) {
    let sum = 0;
    for (let j = i; j < i + win; j++) sum += samples[j] * samples[j];
    level = Math.max(level, Math.sqrt(sum / win));
  }
  const tail = samples.subarray(Math.max(0, samples.length - Math.round(rate * seconds)));
  let crossings = 0;
  for (let i = 1; i < tail.length; i++) if (tail[i - 1] < 0 !== tail[i] < 0) crossings++;
  return { level, hz: tail.length ? crossings / 2 / (tail.length / rate) : 0 };
}
