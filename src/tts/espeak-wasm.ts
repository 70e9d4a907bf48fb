import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runChild } from './child-process';

const RUNNER = 'espeak-wasm-runner';

let cachedRunner: string | undefined;

/**
 * Path of the runner script for node to execute. From dist/ that is the compiled .js next to
 * this file. From the sources (ts-jest) only the .ts exists and node cannot run it, so it is
 * compiled once with the TypeScript compiler, a devDependency wherever the sources are used.
 */
export function wasmRunnerScript(): string {
  if (cachedRunner) return cachedRunner;
  const compiled = join(__dirname, `${RUNNER}.js`);
  if (existsSync(compiled)) return (cachedRunner = compiled);
  const source = readFileSync(join(__dirname, `${RUNNER}.ts`), 'utf8');
  const hash = createHash('sha256').update(source).digest('hex').slice(0, 16);
  const target = join(tmpdir(), `speakerhub-${RUNNER}-${hash}.js`);
  if (!existsSync(target)) {
    const ts = require('typescript') as typeof import('typescript');
    const js = ts.transpileModule(source, {
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
    }).outputText;
    // Parallel jest workers may compile at the same moment; rename makes the last one win whole.
    const temp = `${target}.${process.pid}.tmp`;
    writeFileSync(temp, js);
    renameSync(temp, target);
  }
  return (cachedRunner = target);
}

/** Synthesizes with the npm WebAssembly build of espeak-ng in a child node process. */
export async function synthesizeWasm(text: string, voice: string, outFile: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
  const modulePath = require.resolve('espeak-ng');
  const result = await runChild(process.execPath, [wasmRunnerScript(), modulePath, voice, outFile], text, timeoutMs, { signal });
  if (result.code !== 0) {
    const why = result.stderr || (result.signal ? `killed by ${result.signal}` : `exit code ${result.code}`);
    throw new Error(`espeak-ng (wasm) failed: ${why}`);
  }
}
