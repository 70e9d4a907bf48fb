#!/usr/bin/env node
// Regenerates the docs sections derived from the operation table (docs/rest-api.md): `npm run docs`.
const { readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { renderReadme } = require('../dist/docs/markdown.js');

const file = join(__dirname, '..', 'docs', 'rest-api.md');
const before = readFileSync(file, 'utf8');
const after = renderReadme(before);
if (after !== before) writeFileSync(file, after);
console.log(after === before ? 'docs/rest-api.md is up to date' : 'docs/rest-api.md regenerated');
