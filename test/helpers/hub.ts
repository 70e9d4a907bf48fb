import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createHub, type SpeakerHub } from '../../src/hub';
import type { HubConfigInput } from '../../src/hub-config';
import type { Clock } from '../../src/core/clock';
import type { VirtualDriver } from '../../src/drivers/virtual/virtual-driver';
import type { SpeakerDriver } from '../../src/drivers/driver';
import type { HubExtension } from '../../src/extensions/extension';
import { createLogger } from '../../src/logger';
import { ensureSampleMedia } from '../../src/media/samples';

/** Sample tracks rendered once per machine and shared by every test hub (rendering takes ~1 s). */
/**
 * The sample tracks test hubs serve: made once per run by jest's global setup
 * (test/global-setup.ts), in a folder of the run.
 */
export const SHARED_SAMPLES = sharedSamples();

function sharedSamples(): string {
  const runDir = process.env.SPEAKERHUB_TEST_RUN_DIR;
  if (!runDir) throw new Error('SPEAKERHUB_TEST_RUN_DIR is not set: run the tests through jest (its global setup makes the shared fixtures)');
  return join(runDir, 'samples');
}

export const TEST_TOKEN = 'test-token-0123456789abcdefghij';

export interface TestHub {
  hub: SpeakerHub;
  /** http://127.0.0.1:port */
  base: string;
  /** Every log line the hub wrote, raw JSON text. */
  logs: string[];
  /** GET a path (raw: nothing is encoded for you) with the bearer token; returns status and JSON body. */
  get(path: string, headers?: Record<string, string>): Promise<{ status: number; body: any; headers: Headers }>;
  /** Runs an operation with encoded params; SessionToken is added unless given. */
  op(name: string, params?: Record<string, string>): Promise<any>;
  session: string;
  close(): Promise<void>;
}

/**
 * A real hub (not started) as the tests make them: the shared sample tracks, the REST server on a
 * free loopback port with TEST_TOKEN, debug logs captured in `logs`. Front-end suites (MQTT,
 * the cloud link) pass their extensions.
 */
export async function createTestHub(
  config: HubConfigInput,
  options: { dataDir: string; clock?: Clock; extensions?: HubExtension[]; drivers?: SpeakerDriver[] },
): Promise<{ hub: SpeakerHub; logs: string[] }> {
  const logs: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  await ensureSampleMedia(SHARED_SAMPLES);
  const hub = createHub(
    {
      dataDir: options.dataDir,
      media: { samples: false, folders: [SHARED_SAMPLES] },
      ...config,
      server: { host: '127.0.0.1', port: 0, token: TEST_TOKEN, ...config.server },
      log: { level: 'debug' },
    },
    { clock: options.clock, logger: createLogger({ level: 'debug', stream }), extensions: options.extensions, drivers: options.drivers },
  );
  return { hub, logs };
}

/** Starts a real hub on 127.0.0.1 with a temp data folder; close() removes everything. `extensions`: front ends of the test's own; `drivers`: speaker drivers of its own, beside the configured ones. */
export async function startHub(
  config: HubConfigInput = {},
  options: { clock?: Clock; extensions?: HubExtension[]; drivers?: SpeakerDriver[] } = {},
): Promise<TestHub> {
  const dataDir = await mkdtemp(join(tmpdir(), 'speakerhub-test-'));
  const { hub, logs } = await createTestHub(config, { dataDir, ...options });
  await hub.start();
  const base = hub.url!;
  const get = async (path: string, headers: Record<string, string> = { Authorization: `Bearer ${TEST_TOKEN}` }) => {
    const res = await fetch(base + path, { headers });
    const text = await res.text();
    let body: any = text;
    try {
      body = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: res.status, body, headers: res.headers };
  };
  const init = await get('/api/v1/init_session');
  const t: TestHub = {
    hub,
    base,
    logs,
    get,
    session: init.body.SessionToken,
    async op(name, params = {}) {
      const qs = new URLSearchParams({ SessionToken: t.session, ...params });
      return (await get(`/api/v1/${name}?${qs}`)).body;
    },
    async close() {
      await hub.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  return t;
}

/** The hub's running virtual driver (tests reach its speakers' fault switches: vanish, failNextPlay …). */
export function virtualOf(hub: SpeakerHub): VirtualDriver {
  const d = hub.driver<VirtualDriver>('virtual');
  if (!d) throw new Error('this hub runs no virtual speakers');
  return d;
}
