import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

// The package entry (package.json main / exports["."]) as Homebridge and library users load it,
// in a fresh Node process on the built package.

const ROOT = join(__dirname, '..', '..');
const run = (code: string) => execFileSync(process.execPath, ['-e', code], { cwd: ROOT, encoding: 'utf8' }).trim();

describe('package entry point', () => {
  test('is a plugin initializer registering the SpeakerHub platform, and loads no hub code to do so', () => {
    const out = run(`
      const entry = require('homebridge-speakerhub');
      const registered = [];
      entry({ registerPlatform: (name, ctor) => registered.push([name, typeof ctor]) });
      const hubLoaded = Object.keys(require.cache).some((f) => f.endsWith('/dist/hub.js'));
      console.log(JSON.stringify({ type: typeof entry, registered, hubLoaded }));
    `);
    expect(JSON.parse(out)).toEqual({ type: 'function', registered: [['SpeakerHub', 'function']], hubLoaded: false });
  });

  test('exports the library (createHub, SpeakerHubClient, OPERATIONS …) as before', () => {
    const out = run(`
      const lib = require('homebridge-speakerhub');
      const { createHub, SpeakerHubClient, OPERATIONS, VERSION } = lib;
      console.log(JSON.stringify([typeof createHub, typeof SpeakerHubClient, OPERATIONS.length > 20, VERSION, Object.keys(lib).includes('createHub')]));
    `);
    expect(JSON.parse(out)).toEqual(['function', 'function', true, expect.any(String), true]);
  });

  test('ESM users import the library by name', () => {
    const out = execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "import { createHub, OPERATIONS } from 'homebridge-speakerhub'; import entry from 'homebridge-speakerhub'; console.log(typeof createHub, OPERATIONS.length > 20, typeof entry);",
      ],
      { cwd: ROOT, encoding: 'utf8' },
    ).trim();
    expect(out).toBe('function true function');
  });

  test('Homebridge 2 loads it through import(): the default export is the initializer', () => {
    const out = execFileSync(
      process.execPath,
      ['--input-type=module', '-e', `const m = await import(${JSON.stringify(join(ROOT, 'dist', 'main.js'))}); console.log(typeof m.default);`],
      { encoding: 'utf8' },
    ).trim();
    expect(out).toBe('function');
  });
});
