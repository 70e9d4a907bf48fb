import { defineFrontEnd } from '../extensions/front-end';
import { addMqttOptions, MQTT_FLAG_LABELS, mqttBannerLines, mqttOverrides, type MqttFlags } from './cli-options';
import { MqttConfigSchema, PubsubConfigSchema } from './config';
import type { MqttExtension } from './extension';

/**
 * MQTT: the embedded broker (or an external one), the bridge topics, the pub/sub channel and
 * Home Assistant discovery. On when `mqtt.enabled`; `speakerhub hub` turns it on unless
 * `--mqtt off`, a library hub (createHub, Node-RED, Homebridge) only when its config says so.
 */
export const mqttFrontEnd = defineFrontEnd({
  name: 'mqtt',
  summary: 'MQTT broker (embedded or external), bridge topics, pub/sub channel, Home Assistant discovery',
  config: { mqtt: MqttConfigSchema, pubsub: PubsubConfigSchema },
  enabledBy: (parts) => parts.mqtt.enabled,
  flags: {
    register: (hub) => void addMqttOptions(hub),
    toConfig: (flags) => ({ overrides: mqttOverrides(flags as MqttFlags), labels: MQTT_FLAG_LABELS }),
    defaults: { mqtt: { enabled: true } },
  },
  banner: (ext, options) => (ext ? mqttBannerLines(ext as MqttExtension, options) : []),
  load: async () => {
    const { MqttExtension } = await import('./extension');
    return () => new MqttExtension();
  },
});
