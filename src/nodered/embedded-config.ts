import { join } from 'node:path';
import { ConfigSchema, type HubConfigInput } from '../hub-config';

/** A multi-line or comma list from an editor field. */
function list(v: unknown): string[] {
  if (Array.isArray(v))
    return v
      .map(String)
      .map((s) => s.trim())
      .filter(Boolean);
  if (typeof v !== 'string') return [];
  return v
    .split(/[\n,]/)
    .map((s) => s.trim())
    .filter(Boolean);
}

function int(v: unknown): number | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  const n = Number(v);
  return Number.isInteger(n) ? n : Number.NaN; // NaN fails the hub's validation with the key's name
}

function bool(v: unknown, dflt: boolean): boolean {
  if (v === undefined || v === null || v === '') return dflt;
  return v === true || v === 'true';
}

/** Deep merge of the "more settings" JSON over the fields (objects merge, the rest replaces). */
function merge(base: Record<string, unknown>, extra: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(extra)) {
    const b = out[k];
    out[k] =
      v && typeof v === 'object' && !Array.isArray(v) && b && typeof b === 'object' && !Array.isArray(b)
        ? merge(b as Record<string, unknown>, v as Record<string, unknown>)
        : v;
  }
  return out;
}

let mqttKnown: boolean | undefined;
/** Whether this build of the hub has the MQTT front end (its `mqtt` config section). */
function hubHasMqtt(): boolean {
  if (mqttKnown === undefined) {
    const r = ConfigSchema.safeParse({ mqtt: { enabled: false } });
    mqttKnown = r.success || !r.error.issues.some((i) => i.code === 'unrecognized_keys' && (i as { keys: string[] }).keys.includes('mqtt'));
  }
  return mqttKnown;
}

/**
 * The hub configuration an embedded config node runs: its editor fields mapped onto the
 * same keys as speakerhub.json, then its "more settings" JSON merged over them (any key of
 * the hub's config, e.g. an MQTT broker's section). Validated by createHub like the CLI's.
 */
export function embeddedHubConfig(
  settings: Record<string, unknown>,
  credentials: Record<string, string | undefined>,
  defaults: { userDir?: string; nodeId: string },
): HubConfigInput {
  const drivers = list(settings.drivers);
  const restEnabled = bool(settings.restEnabled, false);
  const config: Record<string, unknown> = {
    dataDir:
      typeof settings.dataDir === 'string' && settings.dataDir.trim()
        ? settings.dataDir.trim()
        : join(defaults.userDir ?? '.', 'speakerhub', defaults.nodeId.replace(/[^\w.-]/g, '_')),
    drivers: drivers.length ? drivers : ['virtual'],
    media: { folders: list(settings.mediaFolders), samples: bool(settings.samples, true) },
    speakers: {
      virtual: { count: int(settings.virtualCount) ?? 3, ...(list(settings.virtualNames).length ? { names: list(settings.virtualNames) } : {}) },
    },
    upnp: { renderers: list(settings.renderers), ssdp: bool(settings.ssdp, true) },
    snapcast: { servers: list(settings.snapcastServers) },
    tts: {
      provider: settings.ttsProvider === 'voicerss' ? 'voicerss' : 'espeak',
      ...(typeof settings.ttsVoice === 'string' && settings.ttsVoice.trim() ? { voice: settings.ttsVoice.trim() } : {}),
      ...(credentials.voicerssKey ? { voicerss: { key: credentials.voicerssKey } } : {}),
    },
    server: restEnabled
      ? {
          enabled: true,
          host: typeof settings.restHost === 'string' && settings.restHost.trim() ? settings.restHost.trim() : '127.0.0.1',
          port: int(settings.restPort) ?? 8090,
          ...(credentials.token ? { token: credentials.token } : {}),
        }
      : { enabled: false },
    ...(typeof settings.interface === 'string' && settings.interface.trim() ? { network: { interface: settings.interface.trim() } } : {}),
    log: { level: typeof settings.logLevel === 'string' && settings.logLevel ? settings.logLevel : 'info' },
  };
  // The MQTT broker only when asked for: inside Node-RED a broker on 1883 nobody chose would
  // surprise (and collide with the one many Node-RED users already run).
  const mqtt = bool(settings.mqttEnabled, false);
  if (hubHasMqtt()) config.mqtt = mqtt ? { enabled: true, port: int(settings.mqttPort) ?? 1883 } : { enabled: false };
  else if (mqtt) throw new Error('This SpeakerHub version has no MQTT broker.');
  let extra: Record<string, unknown> = {};
  if (typeof settings.extraConfig === 'string' && settings.extraConfig.trim()) {
    try {
      extra = JSON.parse(settings.extraConfig) as Record<string, unknown>;
    } catch (e) {
      throw new Error(`More settings is not valid JSON: ${(e as Error).message}`);
    }
    if (!extra || typeof extra !== 'object' || Array.isArray(extra)) throw new Error('More settings must be a JSON object of hub config keys.');
  }
  return merge(config, extra) as HubConfigInput;
}
