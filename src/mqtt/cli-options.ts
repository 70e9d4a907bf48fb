import { InvalidArgumentError, type Command } from 'commander';
import type { MqttExtension, MqttStatus } from './extension';

export interface MqttFlags {
  mqtt?: { enabled: boolean; url?: string };
  mqttPort?: number;
  channel?: string;
  publishKey?: string;
  subscribeKey?: string;
  haDiscovery?: boolean;
  baseTopic?: string;
}

function broker(v: string): { enabled: boolean; url?: string } {
  if (v === 'off' || v === 'false' || v === 'no') return { enabled: false };
  if (v === 'on' || v === 'embedded') return { enabled: true, url: '' };
  if (/^mqtts?:\/\/[^/]+/.test(v)) return { enabled: true, url: v };
  throw new InvalidArgumentError('--mqtt takes off, embedded, or a broker URL (mqtt://host:port or mqtts://host:port).');
}

function port(v: string): number {
  if (!/^\d+$/.test(v) || Number(v) > 65535) throw new InvalidArgumentError('--mqtt-port must be an integer from 0 to 65535.');
  return Number(v);
}

function key(flag: string) {
  return (v: string): string => {
    if (!/^[\x21-\x7e]{16,256}$/.test(v)) throw new InvalidArgumentError(`${flag} must be 16 to 256 printable characters without spaces.`);
    return v;
  };
}

/** Adds the MQTT flags to the `hub` command. */
export function addMqttOptions(cmd: Command): Command {
  return cmd
    .option('--mqtt <broker>', 'MQTT: off, embedded (default), or an external broker mqtt://host:port / mqtts://host:port', broker)
    .option('--mqtt-port <port>', 'embedded MQTT broker TCP port (default 1883)', port)
    .option('--channel <topic>', 'publish/subscribe channel topic (default speakerhub/channel)')
    .option('--publish-key <key>', 'publish key (default: generated once, kept in the data folder)', key('--publish-key'))
    .option('--subscribe-key <key>', 'subscribe key (default: generated once, kept in the data folder)', key('--subscribe-key'))
    .option('--base-topic <topic>', 'root of the MQTT bridge topics (default speakerhub)')
    .option('--ha-discovery', 'publish Home Assistant MQTT discovery');
}

/** Config overrides from the MQTT flags (only flags actually given). */
export function mqttOverrides(f: MqttFlags): Record<string, unknown> {
  return {
    mqtt: {
      enabled: f.mqtt?.enabled,
      url: f.mqtt?.url,
      port: f.mqttPort,
      baseTopic: f.baseTopic,
      haDiscovery: f.haDiscovery,
    },
    pubsub: { channel: f.channel, publishKey: f.publishKey, subscribeKey: f.subscribeKey },
  };
}

/** Config key → flag, so a bad value names the flag the user typed. */
export const MQTT_FLAG_LABELS: Record<string, string> = {
  'mqtt.url': '--mqtt',
  'mqtt.port': '--mqtt-port',
  'mqtt.baseTopic': '--base-topic',
  'pubsub.channel': '--channel',
  'pubsub.publishKey': '--publish-key',
  'pubsub.subscribeKey': '--subscribe-key',
};

/**
 * Terminal banner lines (the keys are secrets: printed here, never logged). Empty when
 * MQTT is off.
 */
export function mqttBannerLines(ext: MqttExtension, options: { tty: boolean } = { tty: true }): string[] {
  const s: MqttStatus | undefined = ext.status;
  if (!s) return [];
  const lines: string[] = [];
  if (s.mode === 'external') {
    lines.push(`  MQTT:       ${s.url} (external broker: its accounts and ACLs apply)`);
  } else {
    const tcp = s.url ?? `no TCP listener: port ${s.portBusy?.port} is in use (choose one with --mqtt-port)`;
    lines.push(`  MQTT:       ${tcp}${s.wsUrl ? `   WebSocket: ${s.wsUrl}` : ''}`);
  }
  lines.push(`  Channel:    ${s.channel}   Bridge: ${s.baseTopic}/#   HKWHubUUID: ${s.uuid}`);
  if (s.mode === 'embedded' && !options.tty) {
    // The keys are secrets: only a terminal shows them (like the API token); elsewhere, where they are.
    lines.push(`  Keys:       not shown (not a terminal); they are in ${s.dataDir}/pubsub-keys.json`);
  } else if (s.mode === 'embedded') {
    const saved = s.keys.generated ? `   (new; saved in ${s.dataDir})` : '';
    lines.push(`  Sub. key:   ${s.keys.subscribeKey}   (MQTT username; read-only with an empty password)`);
    lines.push(`  Pub. key:   ${s.keys.publishKey}   (MQTT password with the subscribe key)${saved}`);
  }
  return lines;
}
