/**
 * The fast tier (npm run test:unit) is chosen by name: *.lab.test.ts suites need a lab or an
 * outside program, every other *.test.ts runs in-process (jest.unit.config.js). This guard keeps
 * the name honest: a fast suite, and every test/ module it imports, may not import lab machinery
 * (namespaces, harnesses of real players, the built CLI, a browser) nor start a program other
 * than node and ffmpeg/ffprobe (the hub's own media code runs ffmpeg, so a machine that develops the hub
 * has it). It reads source text; it cannot see a program started through a variable, which is
 * why the import list, not the program check, is the main net.
 */
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = join(__dirname, '..');
const unitConfig = require('../jest.unit.config.js') as { testPathIgnorePatterns: string[] };

/** What builds or drives a lab: namespaces, real players, the built CLI, a browser. */
const LAB_MACHINERY = [/^test\/helpers\/(labs|chromium|cli|child-hub|lab-networks)\.ts$/, /^test\/.*\/(lab|lan|harness)\.ts$/];
const ALLOWED_PROGRAMS = new Set(['ffmpeg', 'ffprobe']);

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.test.ts') ? [join(dir, e.name)] : [],
  );
}

function fastSuites(): string[] {
  const ignore = unitConfig.testPathIgnorePatterns.map((p) => new RegExp(p));
  return walk(join(ROOT, 'test')).filter((f) => !ignore.some((re) => re.test(f)));
}

function resolveImport(from: string, spec: string): string | undefined {
  const base = resolve(dirname(from), spec);
  return [base, `${base}.ts`, `${base}.js`, join(base, 'index.ts')].find((p) => existsSync(p) && p.includes('.'));
}

/** The suite and the test/ modules it reaches through relative imports (src/ is the hub itself). */
function closure(suite: string): string[] {
  const seen = new Set<string>();
  const queue = [suite];
  while (queue.length) {
    const file = queue.pop()!;
    if (seen.has(file) || !file.startsWith(join(ROOT, 'test'))) continue;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:from|import|require)\s*\(?\s*['"](\.\.?\/[^'"]+)['"]/g)) {
      const target = resolveImport(file, m[1]);
      if (target) queue.push(target);
    }
  }
  return [...seen];
}

/** Why a fast suite is not fast: lab modules it reaches, programs it starts. */
function labUses(suite: string): string[] {
  const found: string[] = [];
  for (const file of closure(suite)) {
    const rel = relative(ROOT, file);
    // The table's own check (test/lab-networks.test.ts) reads it as data and builds nothing.
    const tableCheck = rel === 'test/helpers/lab-networks.ts' && suite.endsWith('lab-networks.test.ts');
    if (!tableCheck && LAB_MACHINERY.some((re) => re.test(rel))) found.push(`imports ${rel}`);
    const text = readFileSync(file, 'utf8');
    const runners = ['spawn', 'spawnSync', 'execFile', 'execFileSync', 'exec', 'execSync'];
    for (const m of text.matchAll(/(\w+)\s*=\s*promisify\(\s*(?:execFile|exec)\s*\)/g)) runners.push(m[1]);
    const call = new RegExp(`\\b(?:${runners.join('|')})\\(\\s*['"\`]([^'"\`]+)['"\`]`, 'g');
    for (const m of text.matchAll(call)) {
      const program = m[1].split('/').pop()!;
      if (!ALLOWED_PROGRAMS.has(program)) found.push(`${rel} runs ${program}`);
    }
  }
  return found;
}

describe('the fast tier', () => {
  test('no fast suite reaches lab machinery or an outside program (name it *.lab.test.ts)', () => {
    const suites = fastSuites();
    expect(suites.length).toBeGreaterThan(30);
    const misplaced = suites.flatMap((s) => labUses(s).map((why) => `${relative(ROOT, s)}: ${why}`));
    expect(misplaced).toEqual([]);
  });

  test('the check sees a lab suite for what it is', () => {
    expect(labUses(join(ROOT, 'test/drivers/upnp/upnp.lab.test.ts'))).toContainEqual(expect.stringMatching(/imports test\/drivers\/upnp\/lab\.ts/));
    expect(labUses(join(ROOT, 'test/media/announcement-clip.lab.test.ts'))).toContain('test/media/announcement-clip.lab.test.ts runs espeak-ng');
  });
});
