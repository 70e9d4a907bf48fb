import { join } from 'node:path';
import type { HubConfigInput } from '../hub-config';
import type { PlatformSettings } from './config';

/**
 * The embedded hub's configuration from the platform block. Everything it writes goes into
 * `<Homebridge storage>/speakerhub`; the REST server runs only when asked for.
 */
export function embeddedHubConfig(settings: PlatformSettings, storagePath: string): HubConfigInput {
  const h = settings.hub;
  const config: Record<string, unknown> = {
    dataDir: join(storagePath, 'speakerhub'),
    drivers: h.drivers,
    log: { level: h.logLevel },
    server: h.rest?.enabled
      ? { enabled: true, host: h.rest.host, port: h.rest.port, ...(h.rest.token ? { token: h.rest.token } : {}) }
      : { enabled: false },
  };
  if (h.interface) config.network = { interface: h.interface };
  if (h.renderers) config.upnp = { renderers: h.renderers };
  if (h.snapcastServers) config.snapcast = { servers: h.snapcastServers };
  if (h.virtualSpeakers) config.speakers = { virtual: { count: h.virtualSpeakers.length, names: h.virtualSpeakers } };
  if (h.mediaFolders || h.samples !== undefined)
    config.media = { ...(h.mediaFolders ? { folders: h.mediaFolders } : {}), ...(h.samples !== undefined ? { samples: h.samples } : {}) };
  if (h.ttsProvider || h.ttsVoice || h.voicerssKey) {
    config.tts = {
      ...(h.ttsProvider ? { provider: h.ttsProvider } : {}),
      ...(h.ttsVoice ? { voice: h.ttsVoice } : {}),
      ...(h.voicerssKey ? { voicerss: { key: h.voicerssKey } } : {}),
    };
  }
  // A `hub.mqtt` block means MQTT on (its own `enabled: false` turns it off again).
  if (h.mqtt) config.mqtt = { enabled: true, ...h.mqtt };
  return deepMerge(config, h.advanced ?? {}) as HubConfigInput;
}

function deepMerge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const cur = out[k];
    out[k] = isPlain(cur) && isPlain(v) ? deepMerge(cur, v) : v;
  }
  return out;
}

function isPlain(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
