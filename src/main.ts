/**
 * The package's entry point, for two kinds of users at once: Homebridge calls it as a plugin
 * initializer (`module.exports = (api) => …`), and library users read createHub,
 * SpeakerHubClient … from it exactly as from ./index.
 *
 * Homebridge loads every installed plugin's entry point, configured or not, so nothing heavy
 * loads here: the library (./index) loads on the first access to one of its names, and the
 * platform loads its hub only when it starts one.
 */
import type * as Library from './index';
import type { API } from './homebridge/homebridge-api';

function homebridgeSpeakerhub(api: API): void {
  (require('./homebridge/plugin') as typeof import('./homebridge/plugin')).initializePlugin(api);
}

let library: typeof Library | undefined;
const load = (): Record<PropertyKey, unknown> => (library ??= require('./index') as typeof Library) as unknown as Record<PropertyKey, unknown>;
const own = (key: PropertyKey) => Object.prototype.hasOwnProperty.call(homebridgeSpeakerhub, key);

const entry = new Proxy(homebridgeSpeakerhub, {
  get: (target, key, receiver) => (own(key) ? Reflect.get(target, key, receiver) : load()[key]),
  has: (target, key) => own(key) || key in load(),
  ownKeys: (target) => [...new Set([...Reflect.ownKeys(target), ...Reflect.ownKeys(load()).filter((k) => k !== '__esModule')])],
  getOwnPropertyDescriptor: (target, key) => {
    if (own(key)) return Reflect.getOwnPropertyDescriptor(target, key);
    if (key === '__esModule' || !(key in load())) return undefined;
    return { value: load()[key], enumerable: true, configurable: true, writable: false };
  },
});

export = entry as typeof homebridgeSpeakerhub & typeof Library;
