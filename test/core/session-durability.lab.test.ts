/**
 * Sessions survive a crash exactly as they were answered: a hub SIGKILLed right after it
 * answered init_session and close_session comes back with the new sessions valid and the
 * closed ones gone (both are on disk before they are answered). The real CLI process, a real
 * SIGKILL, the same data folder.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBuilt, killAll, runCli, waitForBanner, within } from '../helpers/cli';
import { TEST_TOKEN } from '../helpers/hub';

const AUTH = { Authorization: `Bearer ${TEST_TOKEN}` };
let dataDir: string;

beforeAll(async () => {
  await ensureBuilt();
  dataDir = await mkdtemp(join(tmpdir(), 'speakerhub-durable-'));
});
afterAll(async () => {
  killAll();
  await rm(dataDir, { recursive: true, force: true });
});

async function startHub() {
  const cli = runCli(['hub', '-d', dataDir, '--host', '127.0.0.1', '--port', '0', '--mqtt', 'off', '--token', TEST_TOKEN, '--log-level', 'warn']);
  const { base } = await waitForBanner(cli);
  const op = async (name: string, params: Record<string, string> = {}) =>
    (await fetch(`${base}/api/v1/${name}?${new URLSearchParams(params)}`, { headers: AUTH })).json() as Promise<Record<string, string>>;
  return { cli, op };
}

test('sessions opened and closed just before a SIGKILL are as answered after the restart', async () => {
  let hub = await startHub();
  for (let round = 0; round < 3; round++) {
    const opened = await Promise.all([1, 2, 3, 4, 5].map(() => hub.op('init_session')));
    const tokens = opened.map((r) => r.SessionToken);
    const [keep, closeA, closeB] = [tokens.slice(2), tokens[0], tokens[1]];
    const closed = await Promise.all([closeA, closeB].map((t) => hub.op('close_session', { SessionToken: t })));
    expect(closed.map((r) => r.Result)).toEqual(['true', 'true']);
    // Killed the moment the last answer is in: nothing after it may be what made them durable.
    hub.cli.child.kill('SIGKILL');
    await within(hub.cli.exit, 10_000, 'the killed hub to exit');

    hub = await startHub();
    for (const t of keep) expect(await hub.op('device_count', { SessionToken: t })).toMatchObject({ DeviceCount: '3' });
    for (const t of [closeA, closeB]) expect(await hub.op('device_count', { SessionToken: t })).toMatchObject({ ErrorCode: 'SessionNotFound' });
  }
  hub.cli.child.kill('SIGTERM');
  await within(hub.cli.exit, 10_000, 'the hub to stop');
  // Four CLI starts (each builds its library and servers): under a full suite's load that is more
  // than the default 30 s, as the other suites that restart the CLI allow.
}, 120_000);
