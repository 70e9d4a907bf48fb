// Lint (npm run lint): typescript-eslint's recommended rules, and the architecture rule that
// the hub core knows no front end.
const js = require('@eslint/js');
const tseslint = require('typescript-eslint');

/** Front ends and their libraries: src/core must not import them (TEAM rules, README "Development"). */
const FRONT_ENDS = ['server', 'mqtt', 'cloud', 'nodes', 'homebridge', 'cli', 'client', 'extensions', 'docs'];
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
  {
    // Deliberate exceptions: a lazy require of a heavy module only needed on one path; the
    // control characters XML 1.0 cannot carry; the hub handing its own getter to a context object.
    // Lazy requires: the plugin entry loads no hub code until Homebridge uses it, the cloud loads pg
    // only for PostgreSQL; tests load modules per case (fresh module state, optional programs).
    files: ['src/tts/espeak-wasm.ts', 'src/main.ts', 'src/homebridge/platform.ts', 'src/cloud/storage/open.ts', 'test/**/*.ts'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  { files: ['src/drivers/upnp/xml.ts'], rules: { 'no-control-regex': 'off' } },
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
              group: FRONT_ENDS.flatMap((f) => [`../${f}`, `../${f}/*`, `../../${f}`, `../../${f}/*`]),
              message: 'The hub core knows nothing about front ends: they reach it through the operation dispatch and the wire events.',
            },
            { group: FRONT_END_PACKAGES, message: 'The hub core knows nothing about HTTP, MQTT, Node-RED or HomeKit.' },
          ],
        },
      ],
    },
  },
);
