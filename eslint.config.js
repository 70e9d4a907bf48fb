// Lint (npm run lint): typescript-eslint's recommended rules, and the architecture rule that
// the hub core knows no front end.
const js = require('@eslint/js');
const tseslint = require('typescript-eslint');

/** Front ends and their libraries: the inner layers must not import them (docs/development.md). */
const FRONT_ENDS = [
  'server',
  'mqtt',
  'cloud',
  'cloud-link',
  'nodes',
  'nodered',
  'homebridge',
  'cli',
  'rest-client',
  'extensions',
  'docs',
  'web-client',
  'dlna',
  'hub-client',
];
/** The front ends that must not import each other (the sibling rule below). */
const SIBLING_FRONT_ENDS = ['server', 'mqtt', 'cloud', 'cloud-link', 'nodered', 'homebridge', 'dlna'];
/** The modules that compose the hub (they may import everything; nothing inner imports them). */
const COMPOSITION = ['hub', 'hub-config', 'front-ends', 'index', 'main'];

/** Import specifiers naming one of `dirs` (a folder or a top-level module) at any depth of ../ */
const under = (dirs) => [...new Set(dirs)].flatMap((f) => [`../${f}`, `../${f}/*`, `../../${f}`, `../../${f}/*`, `../../../${f}`, `../../../${f}/*`]);

/**
 * One layer's boundary: files under `files` may not import `forbidden` folders (nor `packages`).
 * Layers, inside out: core ← operations; core ← drivers; core ← media; front ends (each a
 * sibling of the others) on top, reaching the core through the extension context.
 */
function layer(files, forbidden, message, extra = []) {
  return {
    files,
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: under(forbidden), message }, ...extra] }],
    },
  };
}
/**
 * A leaf layer's boundary by what it MAY import: files under `files` import nothing outside
 * their folder but `allowed` (folders, or top-level modules such as 'logger'); node: and npm
 * packages are always allowed. Deeper folders (../../) are refused as well.
 */
function leaf(files, allowed, message) {
  const names = allowed.map((a) => (a.endsWith('/') ? a : `${a}$`)).join('|');
  const regex = allowed.length ? `^\\.\\./(?!(?:${names}))` : '^\\.\\./';
  return { files, rules: { 'no-restricted-imports': ['error', { patterns: [{ regex, message }] }] } };
}
const FRONT_END_PACKAGES = ['fastify', '@fastify/*', 'mqtt', 'aedes', 'ws', 'node-red', 'homebridge', 'hap-nodejs', 'commander', 'axios'];

module.exports = tseslint.config(
  { ignores: ['dist/', '.bench-build/', 'node_modules/', 'samples/', 'coverage/', '.cache/', 'bench/results/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // Tests read untyped JSON answers; `any` there is deliberate.
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  // Small modules a person can hold: no file over 500 lines (source, tests, benches, scripts).
  { rules: { 'max-lines': ['error', { max: 500 }] } },
  // The product is typed throughout: `any` in src/ is an error (unknown + a zod schema or a type guard instead).
  { files: ['src/**/*.ts'], rules: { '@typescript-eslint/no-explicit-any': 'error' } },
  {
    // Deliberate exceptions: a lazy require of a heavy module only needed on one path; the
    // control characters XML 1.0 cannot carry; the hub handing its own getter to a context object.
    // Lazy requires: the plugin entry loads no hub code until Homebridge uses it, the library's
    // front-end classes load on first use (src/index.ts), the cloud loads pg
    // only for PostgreSQL; tests load modules per case (fresh module state, optional programs).
    files: ['src/tts/espeak-wasm.ts', 'src/main.ts', 'src/index.ts', 'src/homebridge/platform.ts', 'src/cloud/storage/open.ts', 'test/**/*.ts'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  { files: ['src/hub.ts'], rules: { '@typescript-eslint/no-this-alias': ['error', { allowedNames: ['hub'] }] } },
  {
    files: ['**/*.js'],
    languageOptions: { sourceType: 'commonjs' },
    rules: {
      '@typescript-eslint/no-require-imports': 'off',
      // Node's globals (require, process, Buffer …) in plain JS files: TypeScript checks the TS ones.
      'no-undef': 'off',
    },
  },
  {
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: under([...FRONT_ENDS, ...COMPOSITION]),
              message: 'The hub core knows nothing about front ends: they reach it through the operation dispatch and the wire events.',
            },
            { group: FRONT_END_PACKAGES, message: 'The hub core knows nothing about HTTP, MQTT, Node-RED or HomeKit.' },
          ],
        },
      ],
    },
  },
  layer(
    ['src/operations/**/*.ts'],
    [...FRONT_ENDS, ...COMPOSITION, 'drivers'],
    'The operation table talks to the hub core only: no front end, no driver.',
  ),
  layer(
    ['src/drivers/**/*.ts'],
    [...FRONT_ENDS, ...COMPOSITION, 'operations'],
    'A driver knows no front end and no operation: the core calls it through src/drivers/driver.ts.',
  ),
  {
    // A driver is a folder of its own: it may use the shared driver modules (driver.ts,
    // definition.ts, base-speaker.ts), never another driver's folder.
    files: ['src/drivers/*/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: under([...FRONT_ENDS, ...COMPOSITION, 'operations']), message: 'A driver knows no front end and no operation.' },
            { regex: '^\\.\\./(?!\\.\\.)[^/]+/', message: "A driver does not import another driver's folder: share through src/drivers/*.ts." },
          ],
        },
      ],
    },
  },
  // Each front end is a sibling of the others: it reaches the hub through the extension
  // context and shares only neutral modules (src/rest-client, src/http, src/protocols, src/extensions,
  // src/web-client …). A front end's CLI registrar (cli.ts, cli-options.ts) is composition.
  ...SIBLING_FRONT_ENDS.map((f) =>
    layer(
      [`src/${f}/**/*.ts`],
      SIBLING_FRONT_ENDS.filter((other) => other !== f),
      `A front end does not import another front end: share through a neutral module (src/hub-client, src/rest-client, src/http, src/protocols, src/extensions).`,
    ),
  ).map((c) => ({ ...c, ignores: ['src/*/cli.ts', 'src/*/cli-options.ts'] })),
  // The client layer every front end stands on knows none of them (they are its users).
  layer(['src/hub-client/**/*.ts'], SIBLING_FRONT_ENDS, 'The client layer is shared by the front ends: it imports none of them.'),
  layer(
    ['src/media/**/*.ts'],
    [...FRONT_ENDS, ...COMPOSITION, 'drivers', 'operations'],
    'The media layer (library, media server) knows no front end, driver or operation: shared HTTP plumbing lives in src/net and src/logging.',
  ),
  // The shared leaves everything stands on (docs/development.md "Layout"). src/util holds plain
  // helpers: nothing of the hub.
  leaf(['src/util/**/*.ts'], [], 'src/util imports nothing of the hub (only node: modules and npm packages): it is what every layer may use.'),
  // src/net: sockets, addresses, connection limits; it logs through the logger (pino plumbing).
  leaf(
    ['src/net/**/*.ts'],
    ['util/', 'logging/', 'logger'],
    'src/net imports only src/util and the logger (src/logger.ts, src/logging): it is network plumbing any layer may use.',
  ),
  // src/audio: audio processing (decode, mix, loudness, WAV, synth, the one ffmpeg helper), apart
  // from the media library and its server: every layer that handles audio stands on it.
  leaf(
    ['src/audio/**/*.ts'],
    ['util/', 'logging/', 'logger', 'redact'],
    'src/audio imports only util, the logger and redact: audio processing knows no library, core, driver or front end.',
  ),
  // src/tts: the text-to-speech engines and their cache. It uses the media helpers (duration,
  // cache trimming) and throws the hub's typed errors (core/errors: HubError, a leaf of its own);
  // the rest of the core, the drivers and the front ends are its users.
  leaf(
    ['src/tts/**/*.ts'],
    ['util/', 'net/', 'logging/', 'media/', 'audio/', 'logger', 'core/errors'],
    'src/tts imports only util, net, media, audio, the logger and core/errors: the TTS engines know no core, driver, operation or front end.',
  ),
  // src/protocols: wire protocols as their peers speak them (UPnP, MPD, the cloud link), shared
  // by drivers and front ends alike: they stand on util, net and the logger only, never on the
  // core, a driver, an operation or a front end. Files one folder down (src/protocols/upnp/…)
  // may use their siblings and the other protocols (../), and the same leaves two levels up.
  leaf(
    ['src/protocols/*.ts'],
    ['util/', 'net/', 'logging/', 'logger'],
    'src/protocols imports only util, net and the logger: a protocol knows no core, driver, operation or front end.',
  ),
  {
    files: ['src/protocols/*/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^\\.\\./\\.\\./(?!(?:util/|net/|logging/|logger$))',
              message: 'src/protocols imports only util, net and the logger: a protocol knows no core, driver, operation or front end.',
            },
          ],
        },
      ],
    },
  },
  // src/http: the REST/HTTP helpers the REST server and the cloud share (operation routes,
  // OpenAPI, limits): they stand on the operation table and the core, under every front end.
  layer(
    ['src/http/**/*.ts'],
    [...FRONT_ENDS, ...COMPOSITION, 'drivers'],
    'src/http is shared by the HTTP front ends: it imports no front end, no driver and no composition module.',
  ),
);
