/**
 * The command line and a killed cloud, as users run them (from the built dist/, as
 * `npm test` builds it first): `speakerhub cloud`, `speakerhub account signup|signin`,
 * `speakerhub cloud client add` with the cloud running and stopped; then the cloud is
 * SIGKILLed and restarted: accounts, clients and tokens survive and the hub relinks.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readCredential } from '../../src/cloud-link/credentials';
import { basic, freshDatabase, postForm, PASSWORD } from './helpers';
import { startLinkedHub, type LinkedHub } from './hub';

const CLI = join(__dirname, '../../dist/cli.js');

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

function run(args: string[], stdin?: string): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code) => resolve({ code, out, err }));
    child.stdin.end(stdin ?? '');
  });
}

/** Starts `speakerhub cloud`; resolves once it prints that it runs. */
function startCloudProcess(port: number, data: string, database?: string): Promise<ChildProcess> {
  const args = [CLI, 'cloud', '--port', String(port), '--host', '127.0.0.1', '--data', data, '--log-level', 'warn'];
  if (database) args.push('--database', database);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('SpeakerHub Cloud is running.')) resolve(child);
    });
    child.on('exit', (code) => reject(new Error(`cloud exited ${code}: ${err}`)));
  });
}

let dir: string;
let cloud: ChildProcess | undefined;
let hub: LinkedHub | undefined;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'speakerhub-restart-'));
});
afterAll(async () => {
  await hub?.close();
  cloud?.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

test('accounts, clients and tokens survive a SIGKILLed cloud; the hub relinks', async () => {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const data = join(dir, 'cloud');
  const hubData = join(dir, 'hub');
  const pwFile = join(dir, 'pw');
  await writeFile(pwFile, `${PASSWORD}\n`);
  const database = await freshDatabase();
  const dbFlag = database ? ['--database', database] : [];
  cloud = await startCloudProcess(port, data, database);

  // Sign-up: the password from a file (its trailing newline ignored), or from standard input.
  expect(
    (await run(['account', 'signup', '--cloud', `${base}/some/path`, '--username', 'erin', '--email', 'erin@example.org', '--password-file', pwFile]))
      .code,
  ).toBe(0);
  const piped = await run(['account', 'signup', '--cloud', base, '--username', 'frank', '--email', 'frank@example.org'], `${PASSWORD}\n`);
  expect(piped.code).toBe(0);
  const taken = await run(['account', 'signup', '--cloud', base, '--username', 'ERIN', '--email', 'erin@example.org', '--password-file', pwFile]);
  expect(taken.code).toBe(1);
  expect(taken.err).toMatch(/username "ERIN" is taken/);
  const weak = await run(['account', 'signup', '--cloud', base, '--username', 'gina', '--email', 'gina@example.org'], 'short\n');
  expect(weak.err).toMatch(/password is too weak/);
  const badMail = await run(['account', 'signup', '--cloud', base, '--username', 'gina', '--email', 'gina', '--password-file', pwFile]);
  expect(badMail.err).toMatch(/e-mail address/);
  const wrong = await run(['account', 'signin', '--cloud', base, '--username', 'erin', '--data', hubData], 'wrong password!\n');
  expect(wrong.code).toBe(1);
  expect(wrong.err).toMatch(/Wrong username or password/);

  // A client registered through the running cloud.
  const add = await run([
    'cloud',
    'client',
    'add',
    '--data',
    data,
    '--name',
    'App',
    '--redirect-uri',
    'https://app.example.org/cb',
    '--json',
    ...dbFlag,
  ]);
  expect(add.code).toBe(0);
  const client = JSON.parse(add.out) as { client_id: string; client_secret: string };
  expect(Object.keys(client).sort()).toEqual(['client_id', 'client_secret']);

  // The hub signs in with the CLI, then links with --cloud alone.
  const signin = await run(['account', 'signin', '--cloud', base, '--username', 'erin', '--password-file', pwFile, '--data', hubData]);
  expect(signin.code).toBe(0);
  expect((await readCredential(hubData))!.username).toBe('erin');
  hub = await startLinkedHub(base, 'erin', { dataDir: hubData, withPassword: false });
  await hub.waitFor('online');

  const grant = await postForm(
    `${base}/oauth/token`,
    { grant_type: 'password', username: 'erin', password: PASSWORD },
    { authorization: basic(client.client_id, client.client_secret) },
  );
  expect(grant.status).toBe(200);
  const api = async (token: string) => {
    const r = await fetch(`${base}/api/v1/init_session`, { headers: { authorization: `Bearer ${token}` } });
    return { status: r.status, body: (await r.json()) as Record<string, string> };
  };
  expect((await api(grant.body.access_token)).body.HKWHubUUID).toBe(hub.hub.core.uuid);

  // SIGKILL: nothing is flushed on the way out.
  const offline = hub.waitFor('offline');
  cloud.kill('SIGKILL');
  await new Promise((r) => cloud!.once('exit', r));
  await offline;

  // A client added while no cloud runs goes straight into the database.
  const add2 = await run([
    'cloud',
    'client',
    'add',
    '--data',
    data,
    '--name',
    'Offline app',
    '--redirect-uri',
    'https://b.example.org/cb',
    ...dbFlag,
  ]);
  expect(add2.code).toBe(0);
  const id2 = /client_id:\s+(\S+)/.exec(add2.out)![1];
  const secret2 = /client_secret:\s+(\S+)/.exec(add2.out)![1];

  cloud = await startCloudProcess(port, data, database);
  await hub.waitFor('online');
  // The access token from before the kill still works; so does the refresh token.
  const after = await api(grant.body.access_token);
  expect(after.status).toBe(200);
  expect(after.body.HKWHubUUID).toBe(hub.hub.core.uuid);
  const refreshed = await postForm(`${base}/oauth/token`, {
    grant_type: 'refresh_token',
    refresh_token: grant.body.refresh_token,
    client_id: client.client_id,
    client_secret: client.client_secret,
  });
  expect(refreshed.status).toBe(200);
  expect((await api(refreshed.body.access_token)).status).toBe(200);
  // The account and the client registered while the cloud was down.
  const g2 = await postForm(
    `${base}/oauth/token`,
    { grant_type: 'password', username: 'frank', password: PASSWORD },
    { authorization: basic(id2, secret2) },
  );
  expect(g2.status).toBe(200);

  // `speakerhub hub --cloud` itself: refused without a sign-in, linked after one.
  const frankData = join(dir, 'frank-hub');
  const hubArgs = [
    'hub',
    '--cloud',
    base,
    '--data',
    frankData,
    '--port',
    '0',
    '--host',
    '127.0.0.1',
    '--virtual-speakers',
    '1',
    '--no-samples',
    '--log-level',
    'warn',
  ];
  const refused = await run(hubArgs);
  expect(refused.code).toBe(2);
  expect(refused.err).toMatch(/speakerhub account signin --cloud/);
  expect((await run(['account', 'signin', '--cloud', base, '--username', 'frank', '--data', frankData], `${PASSWORD}\n`)).code).toBe(0);
  const frankHub = spawn(process.execPath, [CLI, ...hubArgs], { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    const hubs = async () =>
      (
        (await (await fetch(`${base}/api/account/hubs`, { headers: { authorization: `Bearer ${g2.body.access_token}` } })).json()) as {
          hubs: unknown[];
        }
      ).hubs;
    while (!(await hubs()).length) await new Promise((r) => setTimeout(r, 50));
    const init = await api(g2.body.access_token);
    expect(init.status).toBe(200);
    expect(init.body.HKWHubUUID).not.toBe(hub.hub.core.uuid);
  } finally {
    frankHub.kill('SIGTERM');
    await new Promise((r) => frankHub.once('exit', r));
  }
}, 90_000);

test('a stale admin file naming a live unrelated process does not stop a new cloud; a running cloud still does', async () => {
  const data = await mkdtemp(join(tmpdir(), 'speakerhub-stale-'));
  // A live process that is no cloud (after a power loss, the saved PID may be anyone's).
  const bystander = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  try {
    await writeFile(
      join(data, 'cloud-admin.json'),
      `${JSON.stringify({ pid: bystander.pid, url: `http://127.0.0.1:${await freePort()}`, token: 'stale-token-0123456789' })}\n`,
    );
    const port = await freePort();
    const first = await startCloudProcess(port, data);
    try {
      // The file now names a cloud that answers: a second one on the same folder is refused.
      const second = await run(['cloud', '--port', String(await freePort()), '--host', '127.0.0.1', '--data', data, '--log-level', 'warn']);
      expect(second.code).not.toBe(0);
      expect(second.err).toMatch(/Another cloud \(process \d+/);
    } finally {
      first.kill('SIGTERM');
      await new Promise((r) => first.once('exit', r));
    }
  } finally {
    bystander.kill('SIGKILL');
    await rm(data, { recursive: true, force: true });
  }
}, 60_000);
