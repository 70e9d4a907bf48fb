#!/usr/bin/env node
// `npm start` in a clone: builds dist/ first when it is missing or older than src/ (the package
// builds when it is packed — `prepack` — so installing it runs no script of ours).
const { execFileSync } = require('node:child_process');
const { existsSync, readdirSync, statSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const newest = (dir) =>
  readdirSync(dir, { withFileTypes: true }).reduce((m, e) => {
    const p = join(dir, e.name);
    return Math.max(m, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }, 0);

const cli = join(root, 'dist', 'cli.js');
if (!existsSync(cli) || statSync(cli).mtimeMs < newest(join(root, 'src'))) {
  process.stderr.write('building dist/ (npm run build)…\n');
  execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], {
    cwd: root,
    stdio: 'inherit',
  });
  execFileSync(process.execPath, [join(root, 'dist', 'media', 'build-samples.js')], { cwd: root, stdio: 'inherit' });
}
