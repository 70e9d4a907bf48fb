/** Runs the built CLI (dist/cli.js) as a child process, as users do. */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

export const ROOT = path.join(__dirname, '../..');
export const CLI = path.join(ROOT, 'dist/cli.js');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/** Builds dist/ when it is missing or older than src/ (the test command normally builds first). */
export async function ensureBuilt(): Promise<void> {
  if (existsSync(CLI) && statSync(CLI).mtimeMs >= newestMtime(path.join(ROOT, 'src'))) return;
  const tsc = path.join(ROOT, 'node_modules/typescript/bin/tsc');
  await new Promise<void>((resolve) => {
    execFile(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: ROOT }, () => resolve());
  });
  if (!existsSync(CLI)) throw new Error('tsc -p tsconfig.build.json did not produce dist/cli.js');
}

export interface Cli {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const children: ChildProcess[] = [];

/** Starts the CLI; `env` is added to a copy of this process's environment without SPEAKERHUB_* keys; `nodeArgs` go to node. */
export function runCli(args: string[], env: Record<string, string> = {}, nodeArgs: string[] = []): Cli {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SPEAKERHUB_') || k === 'SPEAKERHUB_SKIP_LABS'));
  const child = spawn(process.execPath, [...nodeArgs, CLI, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...base, ...env } });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  );
  return { child, stdout: () => out, stderr: () => err, exit };
}

/** Runs the CLI to its end. */
export async function cliResult(
  args: string[],
  env: Record<string, string> = {},
  ms = 20_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const cli = runCli(args, env);
  const { code } = await within(cli.exit, ms, `speakerhub ${args.join(' ')}`);
  return { code, stdout: cli.stdout(), stderr: cli.stderr() };
}

export function killAll(): void {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
}

export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(timer));
}

/** Waits until the CLI printed its REST URL; the token comes from the data folder (stdout is no terminal). */
export async function waitForBanner(cli: Cli): Promise<{ base: string }> {
  const found = new Promise<{ base: string }>((resolve, reject) => {
    const check = () => {
      const url = /REST API:\s+(http:\/\/\S+?)\/api\/v1\/?\s/.exec(cli.stdout());
      if (url && /Media:/.test(cli.stdout())) {
        cli.child.stdout!.off('data', check);
        resolve({ base: url[1] });
      }
    };
    cli.child.stdout!.on('data', check);
    cli.exit.then(({ code }) => reject(new Error(`the CLI exited (${code}) before printing its URL:\n${cli.stdout()}\n${cli.stderr()}`)));
    check();
  });
  return within(found, 20_000, 'the CLI banner');
}
