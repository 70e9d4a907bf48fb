// ESM entry (package.json exports["."]["module-sync"]): named imports of the library
// (`import { createHub } from 'homebridge-speakerhub'`) and the default export Homebridge
// calls. require() and Homebridge's loaders use the CommonJS entry, dist/main.js.
import entry from './dist/main.js';

export default entry;
export * from './dist/index.js';
