import { renderReadme } from '../src/docs/markdown';
import { readConfigComments } from '../src/docs/config-comments';
import { configKeys, configReferenceMarkdown, undocumentedKeys } from '../src/docs/config-reference';
import { OPERATIONS } from '../src/operations/table';
import { ERROR_CODES } from '../src/core/errors';
import { readDoc } from './helpers/docs';

/** The pages with generated parts: the REST reference (operations, errors) and the configuration reference (flags). */
const restApi = readDoc('docs/rest-api.md');
const configuration = readDoc('docs/configuration.md');
const configurationReference = readDoc('docs/configuration-reference.md');

test('docs/rest-api.md operation and error sections are generated from the table (run `npm run docs`)', () => {
  expect(renderReadme(restApi)).toBe(restApi);
});

test('docs/rest-api.md names every operation and every error code', () => {
  for (const op of OPERATIONS) expect(restApi).toContain(`\`${op.name}\``);
  for (const code of Object.keys(ERROR_CODES)) expect(restApi).toContain(`\`${code}\``);
});

test("docs/configuration.md's flag table names every flag of `speakerhub hub` (drivers' and front ends' from their registries)", () => {
  // Imported here: the registries load every driver's and front end's definition.
  const { buildProgram } = require('../src/cli/program') as typeof import('../src/cli/program');
  const { hubCommand } = require('../src/cli/hub-command') as typeof import('../src/cli/hub-command');
  const { driverHubOptions } = require('../src/cli/driver-options') as typeof import('../src/cli/driver-options');
  const { frontEndHubOptions } = require('../src/cli/front-end-options') as typeof import('../src/cli/front-end-options');
  const hub = buildProgram([hubCommand([driverHubOptions, frontEndHubOptions])]).commands.find((c) => c.name() === 'hub')!;
  const start = configuration.indexOf('| Flag | Config key |');
  expect(start).toBeGreaterThan(0);
  const table = configuration.slice(start, configuration.indexOf('\n\n', start));
  const inTable = new Set([...table.matchAll(/--[a-z][a-z0-9-]*/g)].map((m) => m[0]));
  const flags = hub.options.map((o) => o.long!).filter((l) => l && l !== '--help');
  expect(flags.length).toBeGreaterThan(30);
  expect(flags.filter((f) => !inTable.has(f))).toEqual([]);
});

describe('docs/configuration-reference.md, generated from the configuration schema', () => {
  // Reading the comments type-checks the hub's sources: a few seconds, once for these tests.
  let keys: ReturnType<typeof configKeys>;
  beforeAll(() => {
    keys = configKeys(readConfigComments());
  }, 120_000);

  test('regenerating it gives the page as committed (run `npm run docs`)', () => {
    expect(configReferenceMarkdown(keys)).toBe(configurationReference);
  });

  test('every key that holds a value has a description (a comment above its zod property)', () => {
    expect(undocumentedKeys(keys)).toEqual([]);
  });

  test('it lists keys of the core, the drivers and the front ends with their types, ranges and defaults', () => {
    const row = (path: string) => configurationReference.split('\n').find((l) => l.startsWith(`| \`${path}\` |`));
    expect(row('server.port')).toContain('| integer 0–65535 | `8090` |');
    expect(row('log.format')).toContain('"auto" \\| "json" \\| "pretty"');
    expect(row('dataDir')).toContain('`"~/.speakerhub"`');
    expect(row('speakers.virtual.mix')).toContain('| boolean | `false` |');
    expect(row('dlna.allow')).toBeDefined();
    expect(row('snapcast.servers[].address')).toBeDefined();
    expect(row('media.folders')).toContain('array of string');
  });

  test('the table of contents and the configuration page link to it', () => {
    expect(readDoc('docs/README.md')).toContain('(configuration-reference.md)');
    expect(configuration).toContain('(configuration-reference.md)');
  });
});
