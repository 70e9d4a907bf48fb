// The fast tier (npm run test:unit) for the edit–test loop: in-process tests that need no
// Debian package, network namespace, browser, Node-RED/Homebridge runtime or build (dist/).
// npm test still runs everything. A new test file belongs here when it needs none of those.
const base = require('./jest.config');

const UNIT = [
  'test/core/**/*.test.ts',
  'test/tts/spoken-text.test.ts',
  'test/operations/**/*.test.ts',
  'test/docs.test.ts',
  'test/docs-links.test.ts',
  'test/rest/!(config-cli|secrets).test.ts',
  'test/media/!(drm|pcm-decoder).test.ts',
  'test/announce/{engine,virtual,two-hubs,mix,no-burst}.test.ts',
  'test/mqtt/{broker,channel,extension}.test.ts',
  'test/snapcast/units.test.ts',
  'test/upnp/unit.test.ts',
  'test/dlna/{unit,media-server-unit}.test.ts',
  'test/cloud/{oauth,relay,link-protocol}.test.ts',
  'test/tts/voicerss.test.ts',
  'test/drivers/{registry,capabilities}.test.ts',
  'test/drivers/conformance/virtual.test.ts',
  'test/front-ends/embedded-hub.test.ts',
  'test/web-client.test.ts',
  'test/lab-networks.test.ts',
  'test/esphome/{units,plaintext,encrypted,hostile}.test.ts',
];

// In-process suites: one worker per core (jest's default leaves one core idle).
module.exports = { ...base, testMatch: UNIT.map((g) => `<rootDir>/${g}`), maxWorkers: '100%' };
