#!/usr/bin/env node
// Regenerates the operation nodes' editor files from the operation table: `npm run nodered:gen`
// (after `npm run build`). test/nodered/editor.lab.test.ts fails when they are stale.
const { readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { configEditorHtml, operationsEditorHtml, operationsHelpHtml, universalEditorHtml, universalHelpHtml } = require('../dist/nodered/editor.js');

const root = join(__dirname, '..');
for (const [file, text] of [
  ['nodes/speakerhub-operations.html', operationsEditorHtml()],
  ['nodes/locales/en-US/speakerhub-operations.html', operationsHelpHtml()],
  ['nodes/speakerhub.html', universalEditorHtml()],
  ['nodes/locales/en-US/speakerhub.html', universalHelpHtml()],
  // Hand-written but for its driver choice list, which follows src/drivers/registry.ts.
  ['nodes/speakerhub-config.html', configEditorHtml(readFileSync(join(root, 'nodes/speakerhub-config.html'), 'utf8'))],
]) {
  const path = join(root, file);
  let before = '';
  try {
    before = readFileSync(path, 'utf8');
  } catch {
    /* new */
  }
  if (before !== text) writeFileSync(path, text);
  console.log(`${file}: ${before === text ? 'up to date' : 'regenerated'}`);
}
