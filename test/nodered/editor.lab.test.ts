import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { OPERATIONS } from '../../src/operations/table';
import { configEditorHtml, operationsEditorHtml, operationsHelpHtml, universalEditorHtml, universalHelpHtml } from '../../src/nodered/editor';
import { DRIVER_NAMES } from '../../src/drivers/registry';
import { DEDICATED_NODES, generatedOperations, operationNodeTypes } from '../../src/nodered/operation-nodes';
import { ROOT } from './runtime';

/** The editor files and the package's node-red section stay in step with the operation table. */

const read = (f: string) => readFileSync(join(ROOT, f), 'utf8');

test("the operation nodes' editor files are generated from the table (run `npm run nodered:gen`)", () => {
  expect(read('nodes/speakerhub.html')).toBe(universalEditorHtml());
  expect(read('nodes/locales/en-US/speakerhub.html')).toBe(universalHelpHtml());
  expect(read('nodes/speakerhub-operations.html')).toBe(operationsEditorHtml());
  expect(read('nodes/locales/en-US/speakerhub-operations.html')).toBe(operationsHelpHtml());
});

test("the config node's driver choice is generated from the driver registry: one tick per driver, writing the drivers property", () => {
  const html = read('nodes/speakerhub-config.html');
  expect(html).toBe(configEditorHtml(html)); // run `npm run nodered:gen` when this fails
  const block = /<!-- generated:drivers[\s\S]*?<!-- \/generated:drivers -->/.exec(html)![0];
  const ticks = [...block.matchAll(/<input type="checkbox" value="([^"]+)"/g)].map((m) => m[1]);
  expect(ticks).toEqual([...DRIVER_NAMES]);
  expect(block).toContain('<input type="hidden" id="node-config-input-drivers">');
  // The old free-text field is gone (a typo there made a hub that would not start).
  expect(html).not.toMatch(/<input type="text" id="node-config-input-drivers"/);
});

test('one node type per operation: runtime loop, editor registrations, templates and help agree with the table', () => {
  const expected = OPERATIONS.map((o) => `speakerhub-${o.name}`);
  expect(operationNodeTypes()).toEqual(expected);
  const generated = generatedOperations().map((o) => `speakerhub-${o.name}`);
  expect(generated).toEqual(OPERATIONS.filter((o) => !DEDICATED_NODES.has(o.name)).map((o) => `speakerhub-${o.name}`));
  const html = read('nodes/speakerhub-operations.html');
  const registered = JSON.parse(/var OPERATIONS = (\[.*\]);/.exec(html)![1]) as { name: string; params: string[] }[];
  expect(registered.map((o) => `speakerhub-${o.name}`)).toEqual(generated);
  for (const op of generatedOperations()) expect(registered.find((r) => r.name === op.name)!.params).toEqual(Object.keys(op.params.shape));
  const templates = [...html.matchAll(/data-template-name="([^"]+)"/g)].map((m) => m[1]);
  expect(templates).toEqual(generated);
  const help = [...read('nodes/locales/en-US/speakerhub-operations.html').matchAll(/data-help-name="([^"]+)"/g)].map((m) => m[1]);
  expect(help).toEqual(generated);
  // An operation with a hand-written node has it under the same type name, with its own editor and help.
  for (const name of DEDICATED_NODES) {
    expect(read(`nodes/speakerhub-${name}.html`)).toContain(`registerType('speakerhub-${name}'`);
    expect(read(`nodes/locales/en-US/speakerhub-${name}.html`)).toContain(`data-help-name="speakerhub-${name}"`);
  }
});

test('package.json declares the node set (minimum Node-RED version, a .js and .html per file, help, icon, examples)', () => {
  const pkg = JSON.parse(read('package.json'));
  expect(pkg['node-red'].version).toMatch(/^>=\d+\.\d+\.\d+$/);
  expect(pkg.files).toEqual(expect.arrayContaining(['dist/', 'nodes/', 'examples/']));
  for (const [type, file] of Object.entries(pkg['node-red'].nodes as Record<string, string>)) {
    expect(existsSync(join(ROOT, file))).toBe(true);
    const html = file.replace(/\.js$/, '.html');
    expect(existsSync(join(ROOT, html))).toBe(true);
    expect(existsSync(join(ROOT, 'nodes', 'locales', 'en-US', html.split('/').pop()!))).toBe(true);
    expect(type).toMatch(/^speakerhub(-|$)/);
  }
  expect(existsSync(join(ROOT, 'nodes', 'icons', 'speakerhub.svg'))).toBe(true);
  const examples = readdirSync(join(ROOT, 'examples')).filter((f) => f.endsWith('.json'));
  expect(examples.length).toBeGreaterThanOrEqual(3);
  const known = new Set([...operationNodeTypes(), 'speakerhub-config', 'speakerhub-events', 'speakerhub-announce']);
  for (const f of examples) {
    const flow = JSON.parse(read(join('examples', f))) as { type: string; hub?: string }[];
    const speakerhub = flow.filter((n) => n.type.startsWith('speakerhub-'));
    expect(speakerhub.length).toBeGreaterThan(0);
    for (const n of speakerhub) expect(known.has(n.type)).toBe(true);
    const config = flow.find((n) => n.type === 'speakerhub-config') as { id: string } | undefined;
    expect(config).toBeDefined();
    for (const n of speakerhub.filter((x) => x.type !== 'speakerhub-config')) expect(n.hub).toBe(config!.id);
  }
});
