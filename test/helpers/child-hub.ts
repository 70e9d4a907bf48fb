/**
 * A real hub as a child process (dist/cli.js hub --config …), for tests where the hub itself
 * may die or hang: a crash shows as an exit, a blocked event loop as a /healthz that does not
 * answer, and SIGTERM can be checked.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, waitForBanner, within, type Cli } from './cli';
import { SHARED_SAMPLES } from './hub';

export const CHILD_TOKEN = 'child-hub-token-0123456789abcdef';

export interface ChildHub {
  cli: Cli;
  base: string;
  /** Runs an operation with a session of its own; answers the JSON body. */
  op(name: string, params?: Record<string, string>): Promise<any>;
  /** GET /healthz with a bound: the time it took (ms), or throws when it did not answer in boundMs. */
  health(boundMs?: number): Promise<number>;
  alive(): boolean;
  /** Every JSON log line the hub wrote so far. */
  logs(): string[];
  /** SIGTERM; resolves with the exit once it came (rejects if not within 10 s). */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  cleanup(): void;
}

/** `config` is merged into a loopback-only, MQTT-less config with a temp data folder and the shared samples. */
export async function startChildHub(config: Record<string, unknown>): Promise<ChildHub> {
  const dir = mkdtempSync(join(tmpdir(), 'speakerhub-child-'));
  const file = join(dir, 'config.json');
  writeFileSync(
    file,
    JSON.stringify({
      dataDir: join(dir, 'data'),
      server: { host: '127.0.0.1', port: 0, token: CHILD_TOKEN },
      media: { samples: false, folders: [SHARED_SAMPLES] },
      mqtt: { enabled: false },
      log: { level: 'info' },
      ...config,
    }),
  );
  const cli = runCli(['hub', '--config', file]);
  const { base } = await waitForBanner(cli);
  const auth = { Authorization: `Bearer ${CHILD_TOKEN}` };
  const get = async (path: string, ms = 10_000) => (await fetch(base + path, { headers: auth, signal: AbortSignal.timeout(ms) })).json();
  const session = ((await get('/api/v1/init_session')) as { SessionToken: string }).SessionToken;
  return {
    cli,
    base,
    op: (name, params = {}) => get(`/api/v1/${name}?${new URLSearchParams({ SessionToken: session, ...params })}`, 30_000),
    async health(boundMs = 2000) {
      const t0 = Date.now();
      const res = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(boundMs) });
      if (res.status !== 200) throw new Error(`/healthz answered ${res.status}`);
      await res.text();
      return Date.now() - t0;
    },
    alive: () => cli.child.exitCode === null && cli.child.signalCode === null,
    logs: () =>
      cli
        .stdout()
        .split('\n')
        .filter((l) => l.startsWith('{')),
    async stop() {
      cli.child.kill('SIGTERM');
      return within(cli.exit, 10_000, 'the hub to exit after SIGTERM');
    },
    cleanup() {
      if (cli.child.exitCode === null && cli.child.signalCode === null) cli.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Every device of the hub by DeviceName. */
export async function devicesByName(hub: ChildHub): Promise<Record<string, any>> {
  const list: any[] = (await hub.op('device_list')).DeviceList ?? [];
  return Object.fromEntries(list.map((d) => [d.DeviceName, d]));
}
