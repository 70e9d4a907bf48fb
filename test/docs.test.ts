import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderReadme } from '../src/docs/markdown';
import { OPERATIONS } from '../src/operations/table';
import { ERROR_CODES } from '../src/core/errors';

const readme = readFileSync(join(__dirname, '..', 'README.md'), 'utf8');

test('README operation and error sections are generated from the table (run `npm run docs`)', () => {
  expect(renderReadme(readme)).toBe(readme);
});

test('README names every operation and every error code', () => {
  for (const op of OPERATIONS) expect(readme).toContain(`\`${op.name}\``);
  for (const code of Object.keys(ERROR_CODES)) expect(readme).toContain(`\`${code}\``);
});
