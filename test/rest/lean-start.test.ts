import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/**
 * src/util/zod-locales.ts: zod's locales load on first use. Checked in a plain node process
 * (jest has its own module registry, without require.cache), with the module transpiled here.
 */
describe('lazy zod locales', () => {
  const source = ts.transpileModule(readFileSync(path.join(__dirname, '../../src/util/zod-locales.ts'), 'utf8'), {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
  }).outputText;

  function run(body: string): Record<string, unknown> {
    const script = `
      const Module = require('node:module');
      const m = new Module('zod-locales', module); m.paths = module.paths; m._compile(${JSON.stringify(source)}, ${JSON.stringify(path.join(__dirname, '../../src/util/zod-locales.js'))});
      const { z } = require('zod');
      const loaded = () => Object.keys(require.cache).filter((f) => /[\\\\/]zod[\\\\/]v4[\\\\/]locales[\\\\/]/.test(f)).map((f) => require('node:path').basename(f)).sort();
      ${body}`;
    return JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: path.join(__dirname, '../..'), encoding: 'utf8' })) as Record<
      string,
      unknown
    >;
  }

  it('loads only English with zod, and every other locale under its own name on first use', () => {
    const r = run(`
      const before = loaded();
      const issue = (() => { const res = z.string().safeParse(1); return res.error.issues[0].message; })();
      const names = Object.keys(z.locales);
      z.config(z.locales.de());
      const german = z.string().safeParse(1).error.issues[0].message;
      z.config(z.locales.en());
      console.log(JSON.stringify({ before, issue, names: names.length, zhCN: names.includes('zhCN'), german, after: loaded() }));`);
    expect(r.before).toEqual(['en.cjs', 'index.cjs']);
    expect(r.issue).toMatch(/expected string/i);
    expect(r.names).toBeGreaterThan(40);
    expect(r.zhCN).toBe(true);
    expect(r.german).toMatch(/Ungültige Eingabe|erwartet/);
    expect(r.after).toEqual(['de.cjs', 'en.cjs', 'index.cjs']);
  });
});

describe('fastHeaders (the REST fast path reads two headers from the raw list)', () => {
  // Imported here: the module loads the REST server (node:http only).
  const { fastHeaders } = require('../../src/server/rest-server') as typeof import('../../src/server/rest-server');

  it('finds Host and Authorization whatever their case, the first of repeats, as req.headers does', () => {
    expect(fastHeaders(['HOST', 'a', 'authorization', 'Bearer x', 'Host', 'b', 'Authorization', 'Bearer y'])).toEqual({
      host: 'a',
      authorization: 'Bearer x',
    });
    expect(fastHeaders(['Hosts', 'a', 'Authorisation', 'x', 'X-Host', 'c'])).toEqual({ host: undefined, authorization: undefined });
    expect(fastHeaders(['host', ''])).toEqual({ host: '', authorization: undefined });
  });
});
