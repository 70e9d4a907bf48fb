import type { HubLink } from './link';
import type { SpeakerView } from './speakers';
import type { Topics } from './topics';

export interface DiscoveryMessage {
  topic: string;
  config: Record<string, unknown>;
}

/**
 * Home Assistant MQTT discovery. HA has no MQTT media_player, so each speaker becomes a
 * device with a volume number, a playback-state sensor, pause/resume/stop buttons and an
 * announce notify entity; the hub itself is a device with an announce-to-all notify entity.
 */
export function discoveryMessages(topics: Topics, uuid: string, version: string, speakers: SpeakerView[]): DiscoveryMessage[] {
  const hubKey = uuid.replace(/-/g, '').slice(0, 12);
  const hubId = `speakerhub_${hubKey}`;
  const hubDevice = { identifiers: [hubId], name: 'SpeakerHub', manufacturer: 'SpeakerHub', model: 'SpeakerHub', sw_version: version };
  // Who sent the discovery (HA shows it; `origin` is asked of every integration since 2024.2).
  const origin = { name: 'SpeakerHub', sw: version };
  const bridgeAvailability = { topic: topics.state, value_template: '{{ value_json.state }}' };
  const out: DiscoveryMessage[] = [
    {
      topic: `${topics.haPrefix}/notify/${hubId}/announce/config`,
      config: {
        name: 'Announce on all speakers',
        unique_id: `${hubId}_announce`,
        // HA 2025.10 deprecates object_id: the entity id is proposed whole (domain included).
        default_entity_id: `notify.${hubId}_announce`,
        origin,
        // An announcement on every available speaker: what they played comes back afterwards.
        command_topic: topics.request('announce'),
        command_template: '{"Text": {{ value | tojson }}}',
        availability: [bridgeAvailability],
        device: hubDevice,
      },
    },
  ];
  for (const s of speakers) {
    // Scoped by the hub: two hubs on one broker (their virtual speakers have the same DeviceIDs)
    // never share a unique_id.
    const uid = speakerUid(hubKey, s.id);
    const device = {
      identifiers: [uid],
      name: s.record.DeviceName,
      model: s.record.ModelName || 'Speaker',
      manufacturer: 'SpeakerHub',
      via_device: hubId,
    };
    const common = {
      origin,
      availability: [bridgeAvailability, { topic: topics.availability(s.name), value_template: '{{ value_json.state }}' }],
      availability_mode: 'all',
      device,
    };
    const set = topics.set(s.name);
    out.push({
      topic: `${topics.haPrefix}/number/${uid}/volume/config`,
      config: {
        ...common,
        name: 'Volume',
        unique_id: `${uid}_volume`,
        state_topic: topics.speaker(s.name),
        value_template: '{{ value_json.volume }}',
        command_topic: set,
        command_template: '{"volume": {{ value | int }}}',
        min: 0,
        max: 50,
        step: 1,
        mode: 'slider',
        icon: 'mdi:volume-high',
      },
    });
    out.push({
      topic: `${topics.haPrefix}/sensor/${uid}/state/config`,
      config: {
        ...common,
        name: 'Playback',
        unique_id: `${uid}_state`,
        state_topic: topics.speaker(s.name),
        value_template: '{{ value_json.state }}',
        device_class: 'enum',
        options: ['playing', 'paused', 'stopped', 'announcing'],
        icon: 'mdi:speaker',
      },
    });
    for (const action of ['pause', 'resume', 'stop'] as const) {
      out.push({
        topic: `${topics.haPrefix}/button/${uid}/${action}/config`,
        config: {
          ...common,
          name: action[0].toUpperCase() + action.slice(1),
          unique_id: `${uid}_${action}`,
          command_topic: set,
          payload_press: JSON.stringify({ state: action }),
          icon: action === 'pause' ? 'mdi:pause' : action === 'resume' ? 'mdi:play' : 'mdi:stop',
        },
      });
    }
    out.push({
      topic: `${topics.haPrefix}/notify/${uid}/announce/config`,
      config: {
        ...common,
        name: 'Announce',
        unique_id: `${uid}_announce`,
        command_topic: set,
        command_template: '{"announce": {{ value | tojson }}}',
      },
    });
  }
  return out;
}

/** The id a speaker's entities and device are known by in Home Assistant. */
export function speakerUid(hubKey: string, deviceId: string): string {
  return `speakerhub_${hubKey}_${deviceId}`;
}

/** Publishes the discovery configs (retained) now, on new speakers, and when HA comes online. */
export class HaDiscovery {
  constructor(
    private readonly link: Pick<HubLink, 'publish'>,
    private readonly topics: Topics,
    private readonly uuid: string,
    private readonly version: string,
    private readonly speakers: () => SpeakerView[],
  ) {}

  publish(): void {
    for (const m of discoveryMessages(this.topics, this.uuid, this.version, this.speakers())) {
      this.link.publish(m.topic, JSON.stringify(m.config), { qos: 1, retain: true });
    }
  }

  /** `homeassistant/status` says `online` when HA (re)starts: it wants the configs again. */
  haStatus(payload: Buffer): void {
    if (payload.toString('utf8').trim() === 'online') this.publish();
  }
}
