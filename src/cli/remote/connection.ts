import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { SpeakerHubClient } from '../../rest-client/client';
import { HubError } from '../../core/errors';
import { describeError } from '../../logging/pretty';

export const DEFAULT_URL = 'http://127.0.0.1:8090';

/** Options every command that talks to a running hub takes. */
export interface RemoteFlags {
  url?: string;
  token?: string;
  data?: string;
  json?: boolean;
}

export function addRemoteOptions(cmd: Command): Command {
  return cmd
    .option('--url <url>', `the hub's base URL (default: SPEAKERHUB_URL, else ${DEFAULT_URL})`)
    .option('--token <token>', "the hub's API token (default: SPEAKERHUB_TOKEN, else <data folder>/api-token)")
    .option('-d, --data <dir>', "the hub's data folder, where its token is (default: SPEAKERHUB_DATA_DIR, else ~/.speakerhub)")
    .option('--json', 'print JSON (for scripts) instead of a table');
}

export function dataDirOf(flags: RemoteFlags, env: NodeJS.ProcessEnv = process.env): string {
  return flags.data ?? env.SPEAKERHUB_DATA_DIR ?? join(homedir(), '.speakerhub');
}

/** The token: --token, SPEAKERHUB_TOKEN, or the hub's token file; none when the hub runs without auth. */
export function tokenOf(flags: RemoteFlags, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (flags.token) return flags.token;
  if (env.SPEAKERHUB_TOKEN) return env.SPEAKERHUB_TOKEN;
  try {
    return readFileSync(join(dataDirOf(flags, env), 'api-token'), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** A command line the hub cannot act on (exit code 2): what was given, and what it should be. */
export class UsageError extends Error {}

export function connect(flags: RemoteFlags, env: NodeJS.ProcessEnv = process.env): { client: SpeakerHubClient; url: string } {
  const source = flags.url !== undefined ? '--url' : env.SPEAKERHUB_URL !== undefined ? 'SPEAKERHUB_URL' : undefined;
  const url = hubUrl(flags.url ?? env.SPEAKERHUB_URL ?? DEFAULT_URL, source);
  return { client: new SpeakerHubClient({ baseUrl: url, token: tokenOf(flags, env), timeoutMs: 60_000 }), url };
}

/**
 * The hub's base URL as given (flag or variable: the same message names the one used), checked:
 * http or https, a host, no query. `127.0.0.1:8090` (no scheme) gets the form it should have.
 */
export function hubUrl(given: string, source = '--url'): string {
  const text = given.trim().replace(/\/+$/, '');
  let parsed: URL | undefined;
  try {
    parsed = new URL(text);
  } catch {
    parsed = undefined;
  }
  if (parsed && (parsed.protocol === 'http:' || parsed.protocol === 'https:') && parsed.hostname && !parsed.search && !parsed.hash) return text;
  const bare = /^[\w.-]+:\d+$|^\[[\da-f:]+\](:\d+)?$/i.test(text) || /^[\w.-]+$/.test(text);
  const hint = bare ? ` (did you mean http://${text}?)` : '';
  throw new UsageError(
    `${source} must be the hub's http:// or https:// address, e.g. ${DEFAULT_URL}; got ${JSON.stringify(text.slice(0, 80))}${hint}.`,
  );
}

/** A failure as one line that says what to do. */
export function explainRemoteError(e: unknown, url: string): string {
  if (e instanceof HubError) {
    if (e.code === 'Unauthorized')
      return `the hub at ${url} refused the token: pass --token, set SPEAKERHUB_TOKEN, or point --data at the hub's data folder.`;
    return `${e.code}: ${e.message}`;
  }
  const text = describeError(e);
  if (/ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ETIMEDOUT|fetch failed/.test(text)) {
    return `cannot reach the hub at ${url} (${text}): is it running (speakerhub hub)? Set --url or SPEAKERHUB_URL.`;
  }
  return text;
}
