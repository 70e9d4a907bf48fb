#!/usr/bin/env node
// Regenerates the README sections derived from the operation table: `npm run docs`.
const { readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { renderReadme } = require('../dist/docs/markdown.js');

const file = join(__dirname, '..', 'README.md');
const before = readFileSync(file, 'utf8');
const after = renderReadme(before);
if (after !== before) writeFileSync(file, after);
console.log(after === before ? 'README.md is up to date' : 'README.md regenerated');
