// The fast tier (npm run test:unit) for the edit–test loop. The rule is the file's name: a suite
// that needs a lab or an outside program (a Debian package, a network namespace, a browser, the
// Node-RED/Homebridge runtime, the built dist/) is named *.lab.test.ts; every other *.test.ts is
// fast and runs here. npm test still runs everything. test/tiers.test.ts fails when a fast suite
// reaches for lab machinery, so a lab suite that forgot its name shows up at once.
const base = require('./jest.config');

const LAB_SUITE = '\\.lab\\.test\\.ts$';
// In-process suites: one worker per core (jest's default leaves one core idle).
module.exports = {
  ...base,
  testPathIgnorePatterns: ['/node_modules/', LAB_SUITE],
  maxWorkers: '100%',
};
