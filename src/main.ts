/**
 * The package's entry point, for two kinds of users at once: Homebridge calls it as a plugin
 * initializer (`module.exports = (api) => …`), and library users read createHub,
 * SpeakerHubClient … from it exactly as from ./index.
 */
import * as library from './index';
import type { API } from './homebridge/homebridge-api';

function homebridgeSpeakerhub(api: API): void {
  // Loaded on demand: library users never load the plugin's modules.
  (require('./homebridge/plugin') as typeof import('./homebridge/plugin')).initializePlugin(api);
}

export = Object.assign(homebridgeSpeakerhub, library);
