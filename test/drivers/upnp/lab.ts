import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fetchDescription, type RendererDescription } from '../../../src/protocols/upnp/description-parse';
import { httpRequest } from '../../../src/protocols/upnp/http-client';
import { soapCall, type SoapArgs } from '../../../src/protocols/upnp/soap-client';
import { upnpDeviceId } from '../../../src/drivers/upnp/renderer';
import { parseTime } from '../../../src/protocols/upnp/didl';
import { encodeWav } from '../../../src/audio/wav';
import { LAB_NETWORKS } from '../../helpers/lab-networks';
import { Lan, LAN_IFNAME, lanUnavailableReason, type LanHost } from './lan';
import { JsonLines, terminate } from './processes';
import { sleep } from '../../helpers/wait';
import { sine } from '../../helpers/audio';

/**
 * The UPnP test lab: a private LAN (lan.ts) with real gmediarender renderers, a web server
 * and a real hub (hub-main.js, from dist/) in their own namespaces. The test process talks
 * to them from the root namespace by unicast only, always sending from the LAN address.
 */

/** The repository root: found upward from here, so a compiled copy of this file (bench) works too. */
const REPO = findRepo(__dirname);
export const TOKEN = 'upnp-test-token-0123456789abcdef';
const RENDERER_PORT = 49494;
/** Real-time sink: plain fakesink would "play" a 30 s file in well under a second. */
const SINK = 'audioconvert ! audioresample ! fakesink sync=true';

export interface RendererSpec {
  /** LAN host name. */
  host: string;
  friendlyName: string;
  /** Record what it plays to <lab tmp>/<host>.wav (a tee in the sink pipeline). */
  record?: boolean;
}

export interface LabOptions {
  prefix?: string;
  subnet?: string;
  renderers?: RendererSpec[];
  /** Merged into the hub's `upnp` config. */
  upnp?: Record<string, unknown>;
}

export const DEFAULT_RENDERERS: RendererSpec[] = [
  { host: 'r1', friendlyName: 'Kitchen', record: true },
  { host: 'r2', friendlyName: 'Living Room' },
  // Markup characters in a name: descriptions and DIDL must escape them.
  { host: 'r3', friendlyName: 'Office & <Den>' },
];

/** Why the lab cannot run here (then the suite is skipped), or undefined. */
export function labUnavailableReason(): string | undefined {
  const lan = lanUnavailableReason();
  if (lan) return lan;
  for (const cmd of ['gmediarender', 'ffmpeg']) {
    try {
      execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    } catch {
      return `${cmd} is not installed (scripts/install-test-deps.sh installs it)`;
    }
  }
  return undefined;
}

/** One gmediarender process; restart() brings the same renderer (same UDN) back. */
export class Renderer {
  readonly udn: string;
  readonly deviceId: string;
  lines?: JsonLines<{ evt: string }>;
  private proc?: import('node:child_process').ChildProcess;
  private description?: RendererDescription;

  constructor(
    private readonly lab: UpnpLab,
    readonly spec: RendererSpec,
    readonly host: LanHost,
    readonly uuid: string,
  ) {
    this.udn = `uuid:${uuid}`;
    this.deviceId = upnpDeviceId(this.udn);
  }

  get location(): string {
    return `http://${this.host.address}:${RENDERER_PORT}/description.xml`;
  }

  get recording(): string | undefined {
    return this.spec.record ? join(this.lab.tmp, `${this.spec.host}.wav`) : undefined;
  }

  get running(): boolean {
    return !!this.proc && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  async start(): Promise<void> {
    const sink = this.recording
      ? // Both branches synced to the clock: an unsynced filesink would run ahead and make the
        // renderer report positions ahead of what it plays (position = the furthest sink).
        // Unbuffered: the file grows as it plays (not in 64 KiB steps, 1.5 s of 22 kHz mono),
        // so a gap in what a renderer plays shows as a stall in its recording's growth.
        `audioconvert ! audio/x-raw,format=S16LE ! tee name=t ! queue ! audioresample ! fakesink sync=true t. ! queue ! wavenc ! filesink sync=true buffer-mode=unbuffered location=${this.recording}`
      : SINK;
    const proc = this.lab.lan.spawn(this.spec.host, 'gmediarender', [
      '-f',
      this.spec.friendlyName,
      '-u',
      this.uuid,
      '-I',
      LAN_IFNAME,
      '-p',
      String(RENDERER_PORT),
      '--gstout-audiopipe',
      sink,
      '--logfile',
      join(this.lab.tmp, `${this.spec.host}.log`),
    ]);
    this.proc = proc;
    let out = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.spec.friendlyName} did not start: ${out}`)), 15000);
      // gmediarender says it is ready on stdout or stderr, depending on the version.
      const onData = (d: Buffer) => {
        out += d.toString();
        if (out.includes('Ready for rendering')) {
          clearTimeout(timer);
          resolve();
        }
      };
      proc.stdout?.on('data', onData);
      proc.stderr?.on('data', onData);
      proc.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${this.spec.friendlyName} exited (${code}): ${out}`));
      });
    });
  }

  /** Ends the process: SIGKILL is a crash (no SSDP byebye), SIGTERM a clean shutdown. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.proc) await terminate(this.proc, signal);
    this.description = undefined;
  }

  async restart(): Promise<void> {
    await this.kill('SIGTERM');
    await this.start();
  }

  /** Sends a signal without waiting (SIGSTOP/SIGCONT: a renderer that hangs and comes back). */
  signal(signal: NodeJS.Signals): void {
    if (!this.running) throw new Error(`${this.spec.friendlyName} is not running`);
    this.proc!.kill(signal);
  }

  /** A SOAP call straight to the renderer, bypassing the hub. */
  async soap(service: 'AVTransport' | 'RenderingControl', action: string, args: SoapArgs = {}): Promise<Record<string, string>> {
    this.description ??= (await fetchDescription(this.location, { timeoutMs: 3000, localAddress: this.lab.lan.root.address })).description;
    const endpoint = service === 'AVTransport' ? this.description.avTransport : this.description.renderingControl!;
    const base: SoapArgs = service === 'RenderingControl' ? { InstanceID: 0, Channel: 'Master' } : { InstanceID: 0 };
    return soapCall(endpoint, action, { ...base, ...args }, { timeoutMs: 3000, localAddress: this.lab.lan.root.address });
  }

  async transportState(): Promise<string> {
    return (await this.soap('AVTransport', 'GetTransportInfo')).CurrentTransportState;
  }

  /** RelTime in seconds and the track URI, as GetPositionInfo reports them. */
  async position(): Promise<{ rel: number; uri: string }> {
    const r = await this.soap('AVTransport', 'GetPositionInfo');
    return { rel: parseTime(r.RelTime) ?? -1, uri: r.TrackURI };
  }

  /** 0–100 as the renderer has it. */
  async volume(): Promise<number> {
    return Number((await this.soap('RenderingControl', 'GetVolume')).CurrentVolume);
  }
}

export type HubEvent = { evt: string; method?: string; from?: string; t?: number; url?: string; token?: string; mediaBase?: string };
export type WebEvent = { evt: string; method?: string; path?: string; from?: string; t?: number };

/** A hub process (hub-main.js) in a namespace, and a REST client for it. */
export class HubProcess {
  lines!: JsonLines<HubEvent>;
  url = '';
  session = '';

  constructor(
    private readonly lab: UpnpLab,
    readonly hostName: string,
    readonly port: number,
    readonly config: Record<string, unknown>,
    readonly logFile: string,
  ) {}

  async start(): Promise<void> {
    const child = this.lab.lan.spawn(
      this.hostName,
      process.execPath,
      [join(REPO, 'test/drivers/upnp/hub-main.js'), JSON.stringify({ config: this.config, logFile: this.logFile })],
      {
        cwd: REPO,
      },
    );
    this.lines = new JsonLines<HubEvent>(child);
    const ready = await this.lines.waitFor((e) => e.evt === 'ready', 30000, 'the hub to start');
    this.url = ready.url!;
    this.session = (await this.get('/api/v1/init_session')).SessionToken;
  }

  async stop(): Promise<void> {
    if (this.lines) await terminate(this.lines.child, 'SIGTERM', 5000);
  }

  /** A crash: SIGKILL, no clean shutdown (renderers are left as they are). start() runs it again, same data folder. */
  async kill(): Promise<void> {
    if (this.lines) await terminate(this.lines.child, 'SIGKILL');
  }

  async get(path: string): Promise<any> {
    const res = await httpRequest(`${this.url}${path}`, {
      headers: { Authorization: `Bearer ${TOKEN}` },
      timeoutMs: 20000,
      localAddress: this.lab.lan.root.address,
    });
    return JSON.parse(res.body);
  }

  /** Runs an operation (SessionToken added); returns the JSON body. */
  op(name: string, params: Record<string, string> = {}): Promise<any> {
    const qs = new URLSearchParams({ SessionToken: this.session, ...params });
    return this.get(`/api/v1/${name}?${qs}`);
  }

  /** Media requests (GET) renderers made since event index `from`, by renderer address. */
  mediaGets(from = 0): Map<string, number> {
    const out = new Map<string, number>();
    for (const e of this.lines.events.slice(from)) {
      if (e.evt === 'media' && e.method === 'GET' && e.from) out.set(e.from, (out.get(e.from) ?? 0) + 1);
    }
    return out;
  }

  get mark(): number {
    return this.lines.events.length;
  }
}

export class UpnpLab {
  lan!: Lan;
  readonly tmp: string;
  readonly mediaDir: string;
  readonly webDir: string;
  readonly renderers: Renderer[] = [];
  hub!: HubProcess;
  web!: JsonLines<WebEvent>;
  readonly webUrl: string;
  readonly prefix: string;
  private readonly subnet: string;
  private readonly extraHubs: HubProcess[] = [];

  private constructor(private readonly options: LabOptions) {
    this.prefix = options.prefix ?? LAB_NETWORKS.upnp.prefix;
    this.subnet = options.subnet ?? LAB_NETWORKS.upnp.subnet;
    this.tmp = mkdtempSync(join(tmpdir(), 'speakerhub-upnp-'));
    this.mediaDir = join(this.tmp, 'media');
    this.webDir = join(this.tmp, 'web');
    this.webUrl = '';
  }

  static async start(options: LabOptions = {}): Promise<UpnpLab> {
    ensureBuilt();
    const lab = new UpnpLab(options);
    try {
      await lab.boot();
    } catch (e) {
      await lab.stop();
      throw e;
    }
    return lab;
  }

  private async boot(): Promise<void> {
    const specs = this.options.renderers ?? DEFAULT_RENDERERS;
    this.lan = await Lan.create({ prefix: this.prefix, subnet: this.subnet, hosts: ['hub', 'web', ...specs.map((s) => s.host)] });
    makeMedia(this.mediaDir, this.webDir);
    specs.forEach((spec, i) => {
      const uuid = `5eaca4e2-0b1d-4c3e-9a7f-${String(i + 1).padStart(12, '0')}`;
      this.renderers.push(new Renderer(this, spec, this.lan.host(spec.host), uuid));
    });
    const webHost = this.lan.host('web');
    const webChild = this.lan.spawn('web', process.execPath, [join(REPO, 'test/drivers/upnp/web-server.js'), webHost.address, '8080', this.webDir]);
    this.web = new JsonLines<WebEvent>(webChild);
    (this as { webUrl: string }).webUrl = `http://${webHost.address}:8080`;
    await Promise.all([...this.renderers.map((r) => r.start()), this.web.waitFor((e) => e.evt === 'ready', 10000, 'the web server')]);
    this.hub = this.newHub('hub', 8090, {});
    await this.hub.start();
  }

  /** Another hub in a namespace of the LAN (e.g. with SSDP off); stopped with the lab. */
  async startHub(hostName: string, port: number, upnp: Record<string, unknown>): Promise<HubProcess> {
    const hub = this.newHub(hostName, port, upnp);
    this.extraHubs.push(hub);
    await hub.start();
    return hub;
  }

  private newHub(hostName: string, port: number, upnp: Record<string, unknown>): HubProcess {
    const host = this.lan.host(hostName);
    const config = {
      dataDir: join(this.tmp, `hub-data-${hostName}-${port}`),
      media: { samples: false, folders: [this.mediaDir] },
      server: { host: host.address, port, token: TOKEN },
      network: { interface: LAN_IFNAME },
      upnp: {
        recheckIntervalSeconds: 2,
        requestTimeoutMs: 2000,
        playTimeoutSeconds: 6,
        stallSeconds: 6,
        searchIntervalSeconds: 10,
        ...this.options.upnp,
        ...upnp,
      },
      tts: { provider: 'espeak' },
      log: { level: 'debug' },
    };
    return new HubProcess(this, hostName, port, config, join(this.tmp, `hub-${hostName}-${port}.log`));
  }

  renderer(host: string): Renderer {
    const r = this.renderers.find((x) => x.spec.host === host);
    if (!r) throw new Error(`no renderer on ${host}`);
    return r;
  }

  /** Web server GETs since event index `from`, by requester address. */
  webGets(from = 0, path?: string): Map<string, number> {
    const out = new Map<string, number>();
    for (const e of this.web.events.slice(from)) {
      if (e.evt === 'get' && e.method === 'GET' && e.from && (!path || e.path === path)) out.set(e.from, (out.get(e.from) ?? 0) + 1);
    }
    return out;
  }

  /** Persistent IDs of the lab's hub media, by file name. */
  async mediaIds(hub: HubProcess = this.hub): Promise<Record<string, string>> {
    const list = (await hub.op('media_list')).MediaList as { PersistentID: string; Title: string }[];
    return Object.fromEntries(list.map((m) => [m.Title, m.PersistentID]));
  }

  async stop(): Promise<void> {
    for (const h of [...this.extraHubs, this.hub]) await h?.stop().catch(() => undefined);
    await this.lan?.destroy();
    if (!process.env.UPNP_KEEP_TMP) rmSync(this.tmp, { recursive: true, force: true });
  }
}

/** Titles of the lab media (WAV INFO tags): the hub lists them under these names. */
export const MEDIA = { long: 'Long Tone', short: 'Short Tone' } as const;

const tone = (seconds: number, hz: number) => sine(seconds, hz, 22050);

function makeMedia(mediaDir: string, webDir: string): void {
  for (const d of [mediaDir, webDir]) execFileSync('mkdir', ['-p', d]);
  const tags = { artist: 'SpeakerHub Tests', album: 'UPnP' };
  writeFileSync(join(mediaDir, 'long.wav'), encodeWav(tone(40, 440), 22050, { title: MEDIA.long, ...tags }));
  writeFileSync(join(mediaDir, 'short.wav'), encodeWav(tone(3, 660), 22050, { title: MEDIA.short, ...tags }));
  // MP3 from the web exercises the renderer's other decoder (mpg123), as internet radio would.
  execFileSync('ffmpeg', [
    '-loglevel',
    'error',
    '-y',
    '-f',
    'lavfi',
    '-i',
    'sine=frequency=550:duration=40',
    '-ac',
    '1',
    '-ar',
    '22050',
    '-b:a',
    '64k',
    join(webDir, 'song.mp3'),
  ]);
}

/** Builds dist/ when a source file is newer than it: the hub process runs the compiled code. */
export function ensureBuilt(): void {
  const stamp = join(REPO, 'dist/drivers/upnp/index.js');
  const built = existsSync(stamp) ? statSync(stamp).mtimeMs : 0;
  if (newestMtime(join(REPO, 'src')) <= built && existsSync(join(REPO, 'dist/index.js'))) return;
  execFileSync(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: REPO, stdio: 'inherit' });
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

function findRepo(from: string): string {
  for (let dir = resolve(from); ; dir = resolve(dir, '..')) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'test/drivers/upnp/hub-main.js'))) return dir;
    if (dir === resolve(dir, '..')) return process.cwd();
  }
}

export { sleep };
