#!/usr/bin/env node
// Regenerates the docs derived from the code (`npm run docs`): the operation and error sections
// of docs/rest-api.md (from the operation table) and docs/configuration-reference.md (from the
// configuration schema and the comments above its keys).
const { readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { renderReadme } = require('../dist/docs/markdown.js');
const { readConfigComments } = require('../dist/docs/config-comments.js');
const { configKeys, configReferenceMarkdown, undocumentedKeys } = require('../dist/docs/config-reference.js');

/** Writes `file` (relative to the repository) when its text changed, and says which it was. */
function update(file, render) {
  const path = join(__dirname, '..', file);
  let before = '';
  try {
    before = readFileSync(path, 'utf8');
  } catch {
    // A page generated for the first time.
  }
  const after = render(before);
  if (after !== before) writeFileSync(path, after);
  console.log(after === before ? `${file} is up to date` : `${file} regenerated`);
}

update('docs/rest-api.md', renderReadme);

const keys = configKeys(readConfigComments());
update('docs/configuration-reference.md', () => configReferenceMarkdown(keys));
const undocumented = undocumentedKeys(keys);
if (undocumented.length) {
  console.warn(`warning: ${undocumented.length} configuration key(s) without a description (write a comment above the zod property):`);
  for (const key of undocumented) console.warn(`  ${key}`);
}
