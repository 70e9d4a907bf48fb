// Several dependencies (music-metadata and its tokenizer stack, a fastify helper) ship as
// ESM only. Node >= 20.19 can require() them natively, but jest's CommonJS module system
// cannot, so jest compiles exactly those packages to CommonJS with ts-jest.
const esmOnly = [
  'music-metadata',
  'strtok3',
  'token-types',
  '@tokenizer',
  'file-type',
  'uint8array-extras',
  'win-guid',
  '@borewit',
  'media-typer',
  'cookie',
  'aedes',
];
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.[tj]s$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.test.json', diagnostics: { ignoreCodes: [151002] } }],
  },
  transformIgnorePatterns: [`/node_modules/(?!(${esmOnly.join('|')})/)`],
  // ESM-only packages publish no 'require' condition; 'module-sync' points at their ESM entry.
  testEnvironmentOptions: { customExportConditions: ['node', 'node-addons', 'module-sync'] },
  moduleNameMapper: {
    '^content-type$': '<rootDir>/test/helpers/content-type-interop.js',
    // get-intrinsic's helpers (form-data → supertest → node-red-node-test-helper): their
    // 'module-sync' entry is an .mjs; their CommonJS entry is the same function.
    '^(async-function|async-generator-function|generator-function)$': '<rootDir>/node_modules/$1/index.js',
  },
  testTimeout: 30000,
  // Shared fixtures (the sample tracks) are made once per run in a folder of the run.
  globalSetup: '<rootDir>/test/global-setup.ts',
  globalTeardown: '<rootDir>/test/global-teardown.ts',
};
