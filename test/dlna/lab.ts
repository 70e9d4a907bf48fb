import { execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { encodeWav } from '../../src/audio/wav';
import { LAB_NETWORKS } from '../helpers/lab-networks';
import { Lan, LAN_IFNAME, lanUnavailableReason } from '../drivers/upnp/lan';
import { ensureBuilt } from '../drivers/upnp/lab';
import { JsonLines, terminate } from '../drivers/upnp/processes';
import { sine } from '../helpers/audio';

/**
 * The DLNA lab: a private LAN of network namespaces (test/drivers/upnp/lan.ts, prefix shdl, subnet
 * 10.231.15: LAB_NETWORKS) with hub A (virtual speakers, --dlna) in "hub", a web server with the media in
 * "web", control points in "cp", and hub B (the upnp driver, discovering A's renderers) in
 * "hubb". The test process talks to them from the root namespace by unicast (10.231.15.1).
 */

/** The repository root, found upward (a compiled copy of this file, for bench/dlna.js, works too). */
export const REPO = findRepo(__dirname);

function findRepo(from: string): string {
  for (let dir = resolve(from); ; dir = resolve(dir, '..')) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'test/dlna/hub-main.js'))) return dir;
    if (dir === resolve(dir, '..')) return process.cwd();
  }
}
export const TOKEN = 'dlna-test-token-0123456789abcdef';
export const PREFIX = (envNetwork() ?? LAB_NETWORKS.dlna).prefix;
export const SUBNET = (envNetwork() ?? LAB_NETWORKS.dlna).subnet;

export function labUnavailableReason(): string | undefined {
  const lan = lanUnavailableReason();
  if (lan) return lan;
  try {
    execFileSync('sh', ['-c', 'command -v ffmpeg'], { stdio: 'ignore' });
  } catch {
    return 'ffmpeg is not installed (scripts/install-test-deps.sh installs it)';
  }
  return undefined;
}

export type HubLine = {
  evt: string;
  url?: string;
  renderers?: RendererInfo[];
  mediaServer?: { udn: string; name: string; location: string };
  from?: string;
  method?: string;
  path?: string;
  t?: number;
  rss?: number;
};
export interface RendererInfo {
  udn: string;
  name: string;
  kind: 'speaker' | 'all' | 'announce';
  location: string;
}

/** A hub process in a namespace (test/dlna/hub-main.js, or test/drivers/upnp/hub-main.js for hub B). */
export class LabHub {
  lines!: JsonLines<HubLine>;
  url = '';
  session = '';
  renderers: RendererInfo[] = [];
  /** The library's MediaServer, when the hub published one. */
  mediaServer?: { udn: string; name: string; location: string };

  constructor(
    private readonly lab: DlnaLab,
    readonly host: string,
    readonly config: Record<string, unknown>,
    readonly main: string,
    readonly extra: Record<string, unknown> = {},
    /** Node flags for the hub process (the bench: --expose-gc). */
    readonly nodeArgs: string[] = [],
  ) {}

  async start(): Promise<void> {
    const logFile = join(this.lab.tmp, `hub-${this.host}.log`);
    const child = this.lab.lan.spawn(
      this.host,
      process.execPath,
      [join(REPO, this.main), JSON.stringify({ config: this.config, logFile, ...this.extra })],
      {
        cwd: REPO,
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    this.lines = new JsonLines<HubLine>(child);
    const ready = await this.lines.waitFor((e) => e.evt === 'ready', 30000, `hub ${this.host} to start`);
    this.url = ready.url!;
    this.renderers = ready.renderers ?? [];
    this.mediaServer = ready.mediaServer;
    this.session = (await this.get('/api/v1/init_session')).SessionToken;
  }

  get child(): ChildProcess {
    return this.lines.child;
  }

  async stop(): Promise<void> {
    if (this.lines) await terminate(this.lines.child, 'SIGTERM', 8000);
  }

  async get(path: string): Promise<any> {
    const res = await http('GET', `${this.url}${path}`, { Authorization: `Bearer ${TOKEN}` });
    return JSON.parse(res.body);
  }

  op(name: string, params: Record<string, string> = {}): Promise<any> {
    const qs = new URLSearchParams({ SessionToken: this.session, ...params });
    return this.get(`/api/v1/${name}?${qs}`);
  }

  /** Asks the process for its current renderer list. */
  async currentRenderers(): Promise<RendererInfo[]> {
    const mark = this.lines.events.length;
    this.child.stdin!.write('renderers\n');
    const e = await this.lines.waitFor((x) => x.evt === 'renderers', 5000, 'the renderer list', mark);
    return e.renderers!;
  }

  /** Asks the process for its virtual speakers: state, position (seconds) and what each fetched. */
  async speakers(): Promise<{ name: string; state: string; position?: number; fetches: { url: string; live: boolean; duration?: number }[] }[]> {
    const mark = this.lines.events.length;
    this.child.stdin!.write('speakers\n');
    const e = await this.lines.waitFor((x) => x.evt === 'speakers', 5000, 'the virtual speakers', mark);
    return (e as unknown as { speakers: never[] }).speakers;
  }

  renderer(name: string): RendererInfo {
    const r = this.renderers.find((x) => x.name === name);
    if (!r) throw new Error(`no renderer "${name}" (have: ${this.renderers.map((x) => x.name).join(', ')})`);
    return r;
  }

  get mark(): number {
    return this.lines.events.length;
  }
}

/** upnp-mediarenderer-client in the cp namespace (cp-mrc.js). */
export class MrcClient {
  readonly lines: JsonLines<{ evt: string; id?: number; ok?: boolean; value?: any; error?: string; upnpCode?: string; service?: string; e?: any }>;
  private next = 1;

  constructor(lab: DlnaLab, location: string) {
    const child = lab.lan.spawn('cp', process.execPath, [join(REPO, 'test/dlna/cp-mrc.js'), location], {
      cwd: REPO,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.lines = new JsonLines(child);
  }

  ready(): Promise<unknown> {
    return this.lines.waitFor((e) => e.evt === 'ready', 10000, 'the control point');
  }

  async call(cmd: string, args: Record<string, unknown> = {}): Promise<any> {
    const id = this.next++;
    this.lines.child.stdin!.write(`${JSON.stringify({ id, cmd, ...args })}\n`);
    const r = await this.lines.waitFor((e) => e.evt === 'result' && e.id === id, 20000, `${cmd} to answer`);
    if (!r.ok) throw Object.assign(new Error(`${cmd}: ${r.error}`), { upnpCode: r.upnpCode });
    return r.value;
  }

  /** Home Assistant's transport features of the entity after each AVTransport event (cp-mrc.js), since event index `from`. */
  features(from = 0): string[] {
    return this.lines.events
      .slice(from)
      .filter((e) => e.evt === 'event' && e.service === 'AVTransport')
      .map((e) => (e as { features?: string }).features ?? '');
  }

  events(service: string, from = 0): any[] {
    return this.lines.events
      .slice(from)
      .filter((e) => e.evt === 'event' && e.service === service)
      .map((e) => e.e);
  }

  async close(): Promise<void> {
    await terminate(this.lines.child, 'SIGTERM', 2000);
  }
}

export class DlnaLab {
  lan!: Lan;
  readonly tmp = mkdtempSync(join(tmpdir(), 'speakerhub-dlna-'));
  webUrl = '';
  web!: JsonLines<{ evt: string; method?: string; path?: string; from?: string; t?: number }>;
  hubs: LabHub[] = [];

  /** extraHosts: more namespaces on the LAN (e.g. for gmediarender renderers); network: another LAB_NETWORKS entry. */
  static async start(extraHosts: string[] = [], network: { prefix: string; subnet: string } = envNetwork() ?? LAB_NETWORKS.dlna): Promise<DlnaLab> {
    ensureBuilt();
    const lab = new DlnaLab();
    try {
      lab.lan = await Lan.create({ prefix: network.prefix, subnet: network.subnet, hosts: ['hub', 'web', 'cp', 'hubb', ...extraHosts] });
      makeMedia(join(lab.tmp, 'web'));
      const web = lab.lan.host('web');
      lab.web = new JsonLines(
        lab.lan.spawn('web', process.execPath, [join(REPO, 'test/drivers/upnp/web-server.js'), web.address, '8080', join(lab.tmp, 'web')]),
      );
      await lab.web.waitFor((e) => e.evt === 'ready', 10000, 'the web server');
      lab.webUrl = `http://${web.address}:8080`;
    } catch (e) {
      await lab.stop();
      throw e;
    }
    return lab;
  }

  /** Hub A: virtual speakers with these names, DLNA on (unless dlna: false), on the LAN's interface. */
  async startHubA(
    names: string[],
    options: {
      dlna?: boolean | Record<string, unknown>;
      config?: Record<string, unknown>;
      host?: string;
      port?: number;
      drivers?: string[];
      nodeArgs?: string[];
    } = {},
  ): Promise<LabHub> {
    const host = options.host ?? 'hub';
    const config = {
      dataDir: join(this.tmp, `data-${host}`),
      drivers: options.drivers ?? ['virtual'],
      upnp: { searchIntervalSeconds: 5, requestTimeoutMs: 3000 },
      speakers: { virtual: { count: names.length, names } },
      // The web server's files are hub media too (pause/resume of hub media).
      media: { samples: false, folders: [join(this.tmp, 'web')] },
      server: { host: this.lan.host(host).address, port: options.port ?? 8090, token: TOKEN },
      network: { interface: LAN_IFNAME },
      dlna: { enabled: options.dlna !== false, ...(typeof options.dlna === 'object' ? options.dlna : {}) },
      log: { level: 'debug' },
      ...options.config,
    };
    const hub = new LabHub(this, host, config, 'test/dlna/hub-main.js', { dlna: options.dlna !== false }, options.nodeArgs);
    this.hubs.push(hub);
    await hub.start();
    return hub;
  }

  /** Hub B: the upnp driver only (test/drivers/upnp/hub-main.js), discovering renderers on the LAN. */
  async startHubB(): Promise<LabHub> {
    const config = {
      dataDir: join(this.tmp, 'data-hubb'),
      drivers: ['upnp'],
      media: { samples: false },
      server: { host: this.lan.host('hubb').address, port: 8091, token: TOKEN },
      network: { interface: LAN_IFNAME },
      upnp: { searchIntervalSeconds: 5, requestTimeoutMs: 3000, playTimeoutSeconds: 10 },
      log: { level: 'debug' },
    };
    const hub = new LabHub(this, 'hubb', config, 'test/drivers/upnp/hub-main.js');
    this.hubs.push(hub);
    await hub.start();
    return hub;
  }

  /** Web server GETs of a path since event index `from`, by requester address. */
  webGets(path: string, from = 0): string[] {
    return this.web.events
      .slice(from)
      .filter((e) => e.evt === 'get' && e.method === 'GET' && e.path === path)
      .map((e) => e.from!);
  }

  get webMark(): number {
    return this.web.events.length;
  }

  async stop(): Promise<void> {
    for (const h of this.hubs) await h.stop().catch(() => undefined);
    await this.lan?.destroy();
    if (!process.env.DLNA_KEEP_TMP) rmSync(this.tmp, { recursive: true, force: true });
  }
}

/**
 * DLNA_LAB_NETWORK=<prefix>:<a.b.c> runs the lab on another prefix and /24, so that two
 * checkouts on one machine can run DLNA suites at once (each lab removes its prefix's
 * namespaces at start). Unset (CI): LAB_NETWORKS.dlna.
 */
function envNetwork(): { prefix: string; subnet: string } | undefined {
  const m = /^([a-z]{2,8}):(10\.\d{1,3}\.\d{1,3})$/.exec(process.env.DLNA_LAB_NETWORK ?? '');
  return m ? { prefix: m[1], subnet: m[2] } : undefined;
}

const tone = (seconds: number, hz: number) => sine(seconds, hz, 22050);

function makeMedia(dir: string): void {
  execFileSync('mkdir', ['-p', dir]);
  writeFileSync(join(dir, 'long.wav'), encodeWav(tone(30, 440), 22050, { title: 'Long Tone', artist: 'SpeakerHub Tests', album: 'DLNA' }));
  writeFileSync(join(dir, 'short.wav'), encodeWav(tone(2, 660), 22050, { title: 'Short Tone', artist: 'SpeakerHub Tests', album: 'DLNA' }));
  writeFileSync(join(dir, 'next.wav'), encodeWav(tone(20, 550), 22050, { title: 'Next Tone', artist: 'SpeakerHub Tests', album: 'DLNA' }));
  execFileSync('ffmpeg', [
    '-loglevel',
    'error',
    '-y',
    '-f',
    'lavfi',
    '-i',
    'sine=frequency=550:duration=30',
    '-ac',
    '1',
    '-ar',
    '22050',
    '-b:a',
    '64k',
    join(dir, 'song.mp3'),
  ]);
}

/** A plain HTTP request from the root namespace (any method, e.g. SUBSCRIBE). */
export function http(
  method: string,
  url: string,
  headers: Record<string, string> = {},
  body?: string | Buffer,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolvePromise, reject) => {
    const u = new URL(url);
    const req = request(
      {
        // One connection per request: libupnp closes after each answer, and a kept-alive socket would hang up.
        agent: false,
        host: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method,
        headers: body ? { 'Content-Length': String(Buffer.byteLength(body)), ...headers } : headers,
        timeout: 20000,
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => resolvePromise({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${url} timed out`)));
    req.on('error', reject);
    req.end(body);
  });
}

const SERVICE_TYPES: Record<string, string> = {
  AVTransport: 'urn:schemas-upnp-org:service:AVTransport:1',
  RenderingControl: 'urn:schemas-upnp-org:service:RenderingControl:1',
  ConnectionManager: 'urn:schemas-upnp-org:service:ConnectionManager:1',
};

/** A raw SOAP call to a renderer's control URL; the answer's status and body. */
export async function soap(location: string, service: string, action: string, args: Record<string, string | number>, rawBody?: string) {
  const control = location.replace(/description\.xml$/, `${service}/control`);
  const esc = (v: string) => v.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const inner = Object.entries(args)
    .map(([k, v]) => `<${k}>${esc(String(v))}</${k}>`)
    .join('');
  const body =
    rawBody ??
    `<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" s:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><s:Body><u:${action} xmlns:u="${SERVICE_TYPES[service]}">${inner}</u:${action}></s:Body></s:Envelope>`;
  return http('POST', control, { 'Content-Type': 'text/xml; charset="utf-8"', SOAPACTION: `"${SERVICE_TYPES[service]}#${action}"` }, body);
}

/** The value of an element in a SOAP answer (first match), or undefined. */
export function field(body: string, name: string): string | undefined {
  const m = new RegExp(`<${name}>([\\s\\S]*?)</${name}>`).exec(body);
  return m?.[1];
}
