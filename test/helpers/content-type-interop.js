// music-metadata (ESM) does `import ContentType from 'content-type'`. Node gives an ESM default
// import of a CommonJS module its module.exports; jest's CommonJS interop looks for
// exports.default instead, which content-type (marked __esModule) lacks. Give jest both.
const ct = require('../../node_modules/content-type/dist/index.js');
module.exports = { ...ct, default: ct };
