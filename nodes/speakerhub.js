// Node-RED entry (see package.json "node-red"); the node logic is TypeScript in src/nodered, built into dist/.
module.exports = function (RED) {
  require('../dist/nodered/index.js').registerUniversalNode(RED);
};
