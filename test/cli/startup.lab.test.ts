/**
 * Start-up as a new user meets it (issue 8): failures are one line that says what and how
 * to fix, exit code 2 (argument errors too), naming the flag or variable the user set; a
 * config file with a BOM works; settings that would silently do nothing are refused; the
 * token is printed only to a terminal; SIGHUP does not kill the hub.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { explainStartError } from '../../src/cli/start-errors';
import { parseConfig } from '../../src/hub-config';
import { CLI, ROOT, cliResult, ensureBuilt, killAll, runCli, waitForBanner, within } from '../helpers/cli';

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'speakerhub-startup-'));
  dirs.push(d);
  return d;
};

beforeAll(ensureBuilt, 120_000);
afterAll(() => {
  killAll();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A port something listens on (127.0.0.1), for "port in use". */
async function busyPort(): Promise<{ port: number; close: () => void }> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return { port: (srv.address() as net.AddressInfo).port, close: () => srv.close() };
}

const oneLine = (stderr: string) => {
  const lines = stderr.trim().split('\n');
  expect(lines.filter((l) => /^\s+at /.test(l))).toEqual([]); // no stack
  return lines;
};

describe('start-up failures: one line, exit 2', () => {
  test('port in use names the port and --port', async () => {
    const busy = await busyPort();
    try {
      const r = await cliResult(['hub', '--port', String(busy.port), '--host', '127.0.0.1', '--data', tmp(), '--no-samples', '--log-level', 'warn']);
      expect(r.code).toBe(2);
      const lines = oneLine(r.stderr);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`port ${busy.port} on 127.0.0.1 is in use`);
      expect(lines[0]).toContain('--port');
      expect(r.stdout).not.toContain('REST API');
    } finally {
      busy.close();
    }
  });

  test('an address that is not this machine names --host', async () => {
    // 192.0.2.0/24 is TEST-NET-1: never assigned here; binding fails locally, nothing is sent.
    const r = await cliResult(['hub', '--port', '0', '--host', '192.0.2.123', '--data', tmp(), '--no-samples', '--log-level', 'warn']);
    expect(r.code).toBe(2);
    expect(oneLine(r.stderr)).toEqual([expect.stringContaining('192.0.2.123 is not an address of this machine')]);
    expect(r.stderr).toContain('--host');
  });

  test.each([
    [['--port', 'abc'], '--port', 'from 0 to 65535'],
    [['--port', '70000'], '--port', 'from 0 to 65535'],
    [['--virtual-speakers', '-1'], '--virtual-speakers', 'from 0 to 10000'],
    [['--bogus'], '--bogus', 'unknown option'],
  ])('argument error %j exits 2 naming %s', async (args, flag, text) => {
    const r = await cliResult(['hub', ...args, '--data', tmp()]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(flag);
    expect(r.stderr).toContain(text);
  });

  test('a config error from a flag names the flag the user typed', async () => {
    const r = await cliResult(['hub', '--token', 'short', '--data', tmp()]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--token (server.token)');
  });

  test('a missing --media folder names --media and the path', async () => {
    const data = tmp();
    const r = await cliResult([
      'hub',
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--media',
      path.join(data, 'nope'),
      '--data',
      data,
      '--log-level',
      'warn',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`--media (media.folders[0]): ${path.join(data, 'nope')} does not exist`);
  });

  test('tts.provider voicerss without a key is refused at start', async () => {
    const r = await cliResult(['hub', '--tts', 'voicerss', '--port', '0', '--host', '127.0.0.1', '--data', tmp()]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('tts.voicerss.key');
    expect(r.stderr).toContain('required when tts.provider is voicerss');
  });

  test('more speakers.virtual.names than speakers is an error, not silently dropped', async () => {
    const dir = tmp();
    const file = path.join(dir, 'c.json');
    writeFileSync(file, JSON.stringify({ speakers: { virtual: { count: 2, names: ['A', 'B', 'C'] } } }));
    const r = await cliResult(['hub', '--config', file, '--port', '0', '--host', '127.0.0.1', '--data', dir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('speakers.virtual.names');
    expect(r.stderr).toContain('3 names for 2 virtual speaker(s)');
  });

  test('an environment variable with a bad value is named, in the words its flag would get', async () => {
    const r = await cliResult(['hub', '--data', tmp()], { SPEAKERHUB_SERVER_PORT: 'eighty' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('SPEAKERHUB_SERVER_PORT (server.port) must be an integer from 0 to 65535 (got "eighty").');
    const flag = await cliResult(['hub', '--data', tmp(), '--port', 'eighty']);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain('--port must be an integer from 0 to 65535 (got "eighty").');
    // A key that is not an integer still names its variable and key.
    const other = await cliResult(['hub', '--data', tmp()], { SPEAKERHUB_SERVER_AUTH: 'maybe' });
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('SPEAKERHUB_SERVER_AUTH (server.auth)');
  });

  test('--no-auth on a wildcard address warns before anything else happens', async () => {
    // The port is taken, so nothing is ever bound on 0.0.0.0: the warning still comes first.
    const busy = await busyPort();
    try {
      const r = await cliResult([
        'hub',
        '--no-auth',
        '--host',
        '0.0.0.0',
        '--port',
        String(busy.port),
        '--data',
        tmp(),
        '--no-samples',
        '--log-level',
        'silent',
      ]);
      expect(r.stderr).toMatch(/^speakerhub: warning: authentication is OFF and the REST server listens on 0\.0\.0\.0/);
      expect(r.code).toBe(2);
    } finally {
      busy.close();
    }
  });
});

describe('a running hub', () => {
  test('a config file with a UTF-8 BOM is read; env vars set keys; SIGHUP reloads, SIGTERM stops cleanly', async () => {
    const dir = tmp();
    const file = path.join(dir, 'c.json');
    writeFileSync(file, '\ufeff' + JSON.stringify({ speakers: { virtual: { count: 1, names: ['Kitchen'] } }, media: { samples: false } }));
    const cli = runCli(['hub', '--config', file, '--data', dir, '--log-level', 'info'], {
      SPEAKERHUB_SERVER_PORT: '0',
      SPEAKERHUB_SERVER_HOST: '127.0.0.1',
      SPEAKERHUB_LOG_FORMAT: 'json',
    });
    const { base } = await waitForBanner(cli);
    const token = readFileSync(path.join(dir, 'api-token'), 'utf8').trim();
    const auth = { headers: { Authorization: `Bearer ${token}` } };
    const session = ((await (await fetch(`${base}/api/v1/init_session`, auth)).json()) as { SessionToken: string }).SessionToken;
    const list = (await (await fetch(`${base}/api/v1/device_list?SessionToken=${session}`, auth)).json()) as { DeviceList: { DeviceName: string }[] };
    expect(list.DeviceList.map((d) => d.DeviceName)).toEqual(['Kitchen']);

    cli.child.kill('SIGHUP');
    await within(
      new Promise<void>((resolve) => {
        const check = () => /reloading: media folders and API token file/.test(cli.stdout()) && resolve();
        cli.child.stdout!.on('data', check);
        check();
      }),
      10_000,
      'the reload log line',
    );
    // Still serving after SIGHUP.
    expect((await fetch(`${base}/api/v1/device_count?SessionToken=${session}`, auth)).status).toBe(200);
    cli.child.kill('SIGTERM');
    expect(await within(cli.exit, 10_000, 'exit after SIGTERM')).toEqual({ code: 0, signal: null });
    expect(cli.stdout()).toContain('"msg":"hub stopped"');
  });

  test('SIGHUP while the hub starts does not kill it; SIGTERM while it starts stops it cleanly', async () => {
    const lineSeen = (cli: ReturnType<typeof runCli>, re: RegExp) =>
      within(
        new Promise<void>((resolve) => {
          const check = () => re.test(cli.stdout()) && resolve();
          cli.child.stdout!.on('data', check);
          check();
        }),
        20_000,
        `output ${re}`,
      );
    const args = (dir: string) => [
      'hub',
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--data',
      dir,
      '--virtual-speakers',
      '1',
      '--log-level',
      'info',
      '--log-format',
      'json',
    ];
    // The media library's scan line is logged in the middle of the start.
    const hup = runCli(args(tmp()));
    await lineSeen(hup, /media library: /);
    hup.child.kill('SIGHUP');
    await waitForBanner(hup);
    hup.child.kill('SIGTERM');
    expect(await within(hup.exit, 10_000, 'exit after SIGTERM')).toEqual({ code: 0, signal: null });

    const term = runCli(args(tmp()));
    await lineSeen(term, /media library: /);
    term.child.kill('SIGTERM');
    expect(await within(term.exit, 20_000, 'exit after SIGTERM during start')).toEqual({ code: 0, signal: null });
    expect(term.stdout()).toContain('"msg":"hub stopped"');
  });

  test('on a terminal the banner shows the token and pretty logs; the token never reaches the log', async () => {
    // `script` gives the hub a pseudo-terminal, as a person's shell does.
    const dir = tmp();
    const child = spawn(
      'script',
      ['-qfec', `${process.execPath} ${CLI} hub --port 0 --host 127.0.0.1 --data ${dir} --no-samples --virtual-speakers 1`, '/dev/null'],
      {
        cwd: ROOT,
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    const exited = new Promise<void>((r) => child.on('close', () => r()));
    try {
      await within(
        new Promise<void>((resolve) => {
          const check = () => /Media:/.test(out) && resolve();
          child.stdout.on('data', check);
        }),
        20_000,
        'the banner on a terminal',
      );
      const token = readFileSync(path.join(dir, 'api-token'), 'utf8').trim();
      expect(out).toContain(`API token:  ${token}`);
      expect(out).toMatch(/\d\d:\d\d:\d\d\.\d{3} .*INFO.* speaker added {2}name="Virtual Speaker 1"/);
      expect(out).not.toContain('"level":');
      expect(out).toContain('virtual: silent test speakers');
      expect(out.split(token).length - 1).toBe(1); // the banner only
      // The banner names the browser page at /, and the page is there.
      const page = /Web page:\s+(http:\/\/127\.0\.0\.1:\d+\/)\s/.exec(out);
      expect(page).not.toBeNull();
      const res = await fetch(page![1]);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('<title>SpeakerHub</title>');
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
});

describe('explainStartError (the cases a test cannot provoke on loopback)', () => {
  const config = parseConfig({ server: { host: 'speakers.lan', port: 80 }, mediaServer: { port: 8091 } });
  const err = (props: Record<string, unknown>) => Object.assign(new Error(String(props.message ?? 'x')), props);

  test('a host name that does not resolve', () => {
    expect(explainStartError(err({ code: 'ENOTFOUND', hostname: 'speakers.lan', message: 'getaddrinfo ENOTFOUND speakers.lan' }), config)).toBe(
      'cannot start: the host name speakers.lan does not resolve (ENOTFOUND); use an address of this machine, 0.0.0.0 (all) or 127.0.0.1 with --host (server.host).',
    );
  });

  test('a privileged port', () => {
    expect(explainStartError(err({ code: 'EACCES', port: 80 }), config)).toContain(
      'ports below 1024 need privileges: choose a port from 1024 with --port (server.port)',
    );
  });

  test('the media server port in use names --media-port', () => {
    expect(explainStartError(err({ code: 'EADDRINUSE', port: 8091 }), config)).toContain('port 8091 on 127.0.0.1 is in use');
    expect(explainStartError(err({ code: 'EADDRINUSE', port: 8091 }), config)).toContain('--media-port (mediaServer.port)');
  });

  test('anything else keeps its message and code, without a stack', () => {
    expect(explainStartError(err({ code: 'EMFILE', message: 'too many open files' }), config)).toBe('cannot start: too many open files (EMFILE)');
  });
});
