import { Command, InvalidArgumentError } from 'commander';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../logger';
import { CloudAccountError, cloudOrigin, cloudSignin, cloudSignup, readPasswordFile, saveCredential } from '../cloud-link/credentials';
import { addCloudHubOptions } from '../cloud-link/definition';
import { askPassword } from './prompt';
import { parseTrustProxy } from './http/trust-proxy';

/**
 * The cloud's command line: `speakerhub cloud` (the server), `speakerhub cloud client add`,
 * `speakerhub account signup|signin` (the hub's `--cloud*` flags are the cloud link's, in
 * src/cloud-link/definition.ts). cli.ts hooks these in; nothing here runs unless one of them is used, and the cloud server, its storage and
 * the hub's link load only then (a plain `speakerhub hub` never loads them).
 */

const collect = (v: string, acc: string[] = []): string[] => [...acc, v];

function port(v: string): number {
  if (!/^\d+$/.test(v) || Number(v) > 65535) throw new InvalidArgumentError('--port must be an integer from 0 to 65535.');
  return Number(v);
}

const DEFAULT_CLOUD_DATA = join(homedir(), '.speakerhub-cloud');
const DEFAULT_HUB_DATA = join(homedir(), '.speakerhub');

/** Stops with a message (exit code 1 for refusals, 2 for usage problems). */
function fail(message: string, code = 1): never {
  process.stderr.write(`speakerhub: ${message}\n`);
  process.exit(code);
}

async function password(file: string | undefined, question: string): Promise<string> {
  if (file) return readPasswordFile(file);
  return askPassword(question);
}

interface ServeFlags {
  port: number;
  host: string;
  data: string;
  publicUrl?: string;
  database?: string;
  redis?: string;
  maxConnections?: number;
  relayLimit: number;
  trustProxy?: boolean | string;
  logLevel: string;
  logFormat: 'auto' | 'json' | 'pretty';
}

async function serve(f: ServeFlags): Promise<void> {
  const { CloudServer } = await import('./server');
  if (f.publicUrl) cloudOrigin(f.publicUrl);
  // As the hub's: readable lines on a terminal, JSON for journald and log shippers.
  const logger = createLogger({ level: f.logLevel, format: f.logFormat });
  const cloud = new CloudServer({
    host: f.host,
    port: f.port,
    dataDir: f.data,
    publicUrl: f.publicUrl,
    database: f.database,
    redis: f.redis,
    trustProxy: f.trustProxy,
    connections: f.maxConnections ? { maxConnections: f.maxConnections } : undefined,
    rateLimits: f.relayLimit > 0 ? { relay: { burst: 2 * f.relayLimit, perSecond: f.relayLimit } } : undefined,
    logger,
  });
  await cloud.start();
  const pub = cloud.context.publicUrl();
  process.stdout.write(
    [
      'SpeakerHub Cloud is running.',
      `  Web site:   ${pub}/   (browser client; sign up at ${pub}/signup)`,
      `  API:        ${pub}/api/v1/<operation>   (OAuth 2.0 bearer tokens from ${pub}/oauth/token)`,
      `  Storage:    ${cloud.context.db.engine === 'postgres' ? 'PostgreSQL' : `SQLite file in ${f.data}`}`,
      ...(f.redis ? ['  Cluster:    one instance of a cluster (Redis for hub routing, shared rate limits and revocations)'] : []),
      '',
    ].join('\n'),
  );
  let stopping = false;
  const shutdown = () => {
    if (stopping) return;
    stopping = true;
    cloud.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

async function addClient(f: { data: string; name: string; redirectUri: string[]; json?: boolean; database?: string }): Promise<void> {
  let result: { client_id: string; client_secret: string };
  const [{ runningCloud }, { openDatabase }, { Clients }, { AccountError }] = await Promise.all([
    import('./admin'),
    import('./storage/open'),
    import('./accounts/clients'),
    import('./accounts/accounts'),
  ]);
  const running = await runningCloud(f.data);
  if (running) {
    const res = await fetch(`${running.url}/admin/clients`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${running.token}` },
      body: JSON.stringify({ name: f.name, redirectUris: f.redirectUri }),
    });
    const body = (await res.json()) as { client_id: string; client_secret: string; error_description?: string };
    if (!res.ok) fail(body.error_description ?? `the cloud answered HTTP ${res.status}`);
    result = body;
  } else {
    const db = await openDatabase({ dataDir: f.data, database: f.database });
    try {
      result = await new Clients(db).register({ name: f.name, redirectUris: f.redirectUri });
    } catch (e) {
      if (e instanceof AccountError) fail(e.message, 2);
      throw e;
    } finally {
      await db.close();
    }
  }
  if (f.json) process.stdout.write(`${JSON.stringify({ client_id: result.client_id, client_secret: result.client_secret })}\n`);
  else
    process.stdout.write(
      `client_id:     ${result.client_id}\nclient_secret: ${result.client_secret}\n(The secret is shown only now; keep it safe.)\n`,
    );
}

function guard<A extends unknown[]>(fn: (...a: A) => Promise<void>) {
  return async (...a: A) => {
    try {
      await fn(...a);
    } catch (e) {
      if (e instanceof CloudAccountError) fail(e.message);
      fail((e as Error).message ?? String(e), 2);
    }
  };
}

export function registerCloudCommands(program: Command, hub?: Command): void {
  if (hub) addCloudHubOptions(hub);
  const cloud = program.command('cloud').description('SpeakerHub Cloud: accounts, OAuth 2.0, hub links, the browser client.');
  cloud
    .command('serve', { isDefault: true })
    .description('Run the cloud server (the default subcommand).')
    .option('-p, --port <port>', 'port (default 8080)', port, 8080)
    .option('--host <address>', 'bind address (default 0.0.0.0)', '0.0.0.0')
    .option('-d, --data <dir>', `data folder (default ${DEFAULT_CLOUD_DATA})`, DEFAULT_CLOUD_DATA)
    .option('--public-url <url>', 'the origin browsers and hubs use, e.g. https://cloud.example.org (default http://<host>:<port>)')
    .option('--database <url>', 'postgres://user@host/db for PostgreSQL (default: SQLite file in the data folder)')
    .option('--redis <url>', 'redis://host:6379: run as one instance of a cluster (needs --database postgres://…)')
    .option('--max-connections <n>', 'open connections in total, hub links included (default 10000)', (v: string) => {
      if (!/^\d+$/.test(v) || Number(v) < 1) throw new InvalidArgumentError('--max-connections must be a positive integer.');
      return Number(v);
    })
    .option(
      '--relay-limit <n>',
      'relayed requests per second per user, across the cluster (twice that at once; 0 = no limit)',
      (v: string) => {
        if (!/^\d+$/.test(v)) throw new InvalidArgumentError('--relay-limit must be a non-negative integer.');
        return Number(v);
      },
      1000,
    )
    .option(
      '--trust-proxy [proxies]',
      "behind a reverse proxy: the balancers' addresses/CIDRs (comma-separated), or a hop count (bare: 1); client addresses (for rate limits) from their X-Forwarded-For entries only",
      (v: string) => {
        try {
          parseTrustProxy(v);
        } catch (e) {
          throw new InvalidArgumentError((e as Error).message);
        }
        return v;
      },
    )
    .option('--log-level <level>', 'fatal, error, warn, info, debug, trace or silent', 'info')
    .option(
      '--log-format <format>',
      'json, pretty, or auto (default: pretty on a terminal, JSON otherwise)',
      (v: string) => {
        if (v !== 'auto' && v !== 'json' && v !== 'pretty') throw new InvalidArgumentError('--log-format takes auto, json or pretty.');
        return v;
      },
      'auto',
    )
    .action(guard(serve));
  cloud
    .command('client')
    .description('OAuth clients of the cloud.')
    .command('add')
    .description('Register an OAuth client; prints its client_id and client_secret (works with the cloud running or not).')
    .option('-d, --data <dir>', `the cloud's data folder (default ${DEFAULT_CLOUD_DATA})`, DEFAULT_CLOUD_DATA)
    .requiredOption('--name <name>', "the application's name, shown on the consent page")
    .requiredOption('--redirect-uri <uri>', 'a redirect URI (repeatable)', collect)
    .option('--json', 'print {"client_id","client_secret"}')
    .option('--database <url>', 'postgres://… when the cloud uses PostgreSQL')
    .action(guard(addClient));

  const account = program.command('account').description('Your SpeakerHub Cloud account (for `speakerhub hub --cloud`).');
  account
    .command('signup')
    .description('Create an account on a cloud.')
    .requiredOption('--cloud <url>', "the cloud's URL")
    .requiredOption('--username <name>', '2–32 letters, digits, ".", "_" or "-"')
    .requiredOption('--email <address>', 'your e-mail address')
    .option('--password-file <file>', 'read the password from this file (else it is asked for)')
    .action(
      guard(async (f: { cloud: string; username: string; email: string; passwordFile?: string }) => {
        const pw = await password(f.passwordFile, 'Choose a password (at least 10 characters): ');
        await cloudSignup(f.cloud, f.username, f.email, pw);
        process.stdout.write(
          `Account ${f.username} created on ${cloudOrigin(f.cloud)}. Next: speakerhub account signin --cloud ${cloudOrigin(f.cloud)} --username ${f.username}\n`,
        );
      }),
    );
  account
    .command('signin')
    .description("Sign the hub in: keeps a link token in the hub's data folder for `speakerhub hub --cloud`.")
    .requiredOption('--cloud <url>', "the cloud's URL")
    .requiredOption('--username <name>', 'your username')
    .option('--password-file <file>', 'read the password from this file (else it is asked for)')
    .option('-d, --data <dir>', `the hub's data folder (default ${DEFAULT_HUB_DATA})`, DEFAULT_HUB_DATA)
    .option('--revoke-other-links', "revoke every other link token of the account (a leaked or given-away hub's); their links close")
    .action(
      guard(async (f: { cloud: string; username: string; passwordFile?: string; data: string; revokeOtherLinks?: boolean }) => {
        const pw = await password(f.passwordFile, `Password for ${f.username}: `);
        const { revoked, ...cred } = await cloudSignin(f.cloud, f.username, pw, { revokeOthers: f.revokeOtherLinks });
        await saveCredential(f.data, cred);
        process.stdout.write(
          `Signed in as ${cred.username} on ${cred.cloud}; link token saved in ${f.data}. Start the hub with: speakerhub hub --cloud ${cred.cloud} --data ${f.data}\n` +
            (revoked === undefined
              ? ''
              : `Revoked ${revoked} other link token${revoked === 1 ? '' : 's'}: every other hub of this account must sign in again.\n`),
        );
      }),
    );
}
