/**
 * Child-process entry point for the WebAssembly espeak-ng (started by espeak-wasm.ts).
 *
 *   node espeak-wasm-runner.js <espeak-ng module file> <voice> <out.wav>   (text on stdin, UTF-8)
 *
 * Exit 0 with the WAV written, or exit 1 with the reason on stderr. It runs in its own process
 * because the emscripten module, once loaded, holds ~80 MB (18 MB of wasm, its memory, the
 * voice data in an in-memory file system) for good, and because the package is ESM-only.
 */
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

interface EmscriptenFs {
  writeFile(path: string, data: string): void;
  readFile(path: string): Uint8Array;
}

interface EspeakModule {
  FS: EmscriptenFs;
}

/** The emscripten Module overrides this build honours (see its generated espeak-ng.js). */
interface EspeakModuleArg {
  arguments: string[];
  print(line: string): void;
  printErr(line: string): void;
  quit(status: number, toThrow: unknown): void;
  preRun: Array<(module: EspeakModule) => void>;
}

type EspeakFactory = (arg: EspeakModuleArg) => Promise<EspeakModule>;

// tsc (module: commonjs) turns import() into require(); a Function body is left alone, so
// this stays a real ESM import, which the package needs for its import.meta.url.
const importEsm = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<{ default: EspeakFactory }>;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function main(): Promise<void> {
  const [modulePath, voice, outFile] = process.argv.slice(2);
  if (!modulePath || !voice || !outFile) throw new Error('usage: espeak-wasm-runner <module> <voice> <out.wav>');
  const text = await readStdin();
  const { default: createEspeak } = await importEsm(pathToFileURL(modulePath).href);

  let status = 0;
  const errors: string[] = [];
  const espeak = await createEspeak({
    // The text goes through a file, not argv, so a text starting with '-' is never an option.
    arguments: ['-b', '1', '-v', voice, '-w', '/out.wav', '-f', '/in.txt'],
    print: () => undefined,
    printErr: (line) => {
      // emscripten's own note that exit() did not tear the runtime down; not espeak's reason.
      if (!line.startsWith('program exited')) errors.push(line);
    },
    quit: (code, toThrow) => {
      status = code;
      throw toThrow;
    },
    preRun: [(module) => module.FS.writeFile('/in.txt', text)],
  });
  // The factory resolves once main() has returned, so status and the output file are final here.
  if (status !== 0) throw new Error(errors.join('; ') || `espeak-ng exited with status ${status}`);
  let wav: Uint8Array;
  try {
    wav = espeak.FS.readFile('/out.wav');
  } catch {
    throw new Error(errors.join('; ') || 'espeak-ng wrote no audio');
  }
  writeFileSync(outFile, wav);
}

main().catch((e: unknown) => {
  process.stderr.write(e instanceof Error ? e.message : String(e));
  process.exitCode = 1;
});
