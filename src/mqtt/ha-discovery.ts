import { ERROR_EVENT_TYPES } from './command-errors';
import type { BrokerLink } from './broker-link';
import type { SpeakerView } from './speakers';
import type { Topics } from './topics';

export interface DiscoveryMessage {
  topic: string;
  config: Record<string, unknown>;
}

/** A library item as the play selects offer it. */
export interface MediaChoice {
  persistentId: string;
  title: string;
  artist?: string;
}

export interface DiscoveryExtras {
  /** The hub's web page (the hub device's "Visit" link in HA). */
  configurationUrl?: string;
  /** The library, for the play selects (the first MAX_SELECT_OPTIONS items). */
  media?: MediaChoice[];
}

/** HA renders every option of a select: a library of thousands stays out of it. */
export const MAX_SELECT_OPTIONS = 100;

/**
 * Select options from library items: unique labels (a repeated title gets its artist, then a
 * number), and the label → PersistentID map the command template uses.
 */
export function selectOptions(media: MediaChoice[]): { options: string[]; ids: Record<string, string> } {
  const ids: Record<string, string> = {};
  for (const m of media.slice(0, MAX_SELECT_OPTIONS)) {
    const base = (m.title || m.persistentId).slice(0, 120);
    let label = base in ids && m.artist ? `${base} (${m.artist.slice(0, 60)})` : base;
    for (let n = 2; label in ids; n++) label = `${base} (${n})`;
    ids[label] = m.persistentId;
  }
  return { options: Object.keys(ids), ids };
}

/** The topic suffixes of one speaker's discovery configs (a forgotten speaker's are cleared). */
export const SPEAKER_CONFIGS = [
  'number/%/volume',
  'sensor/%/state',
  'button/%/pause',
  'button/%/resume',
  'button/%/stop',
  'notify/%/announce',
  'notify/%/announce_duck',
  'switch/%/mute',
  'switch/%/power',
  'select/%/play',
  'event/%/command_error',
] as const;

/** notify's send_message has a title since HA 2024.5: spoken before the message when given. */
const ANNOUNCE_TEMPLATE = (field: string, extra = '') =>
  `{"${field}": {% if title is defined and title %}{{ (title ~ '. ' ~ value) | tojson }}{% else %}{{ value | tojson }}{% endif %}${extra}}`;

/**
 * Home Assistant MQTT discovery. HA has no MQTT media_player, so each speaker becomes a
 * device with a volume number, a playback-state sensor, pause/resume/stop buttons and an
 * announce notify entity; the hub itself is a device with an announce-to-all notify entity.
 */
export function discoveryMessages(
  topics: Topics,
  uuid: string,
  version: string,
  speakers: SpeakerView[],
  extras: DiscoveryExtras = {},
): DiscoveryMessage[] {
  const hubKey = uuid.replace(/-/g, '').slice(0, 12);
  const hubId = `speakerhub_${hubKey}`;
  const hubDevice = {
    identifiers: [hubId],
    name: 'SpeakerHub',
    manufacturer: 'SpeakerHub',
    model: 'SpeakerHub',
    sw_version: version,
    ...(extras.configurationUrl ? { configuration_url: extras.configurationUrl } : {}),
  };
  // Who sent the discovery (HA shows it; `origin` is asked of every integration since 2024.2).
  // Its url is the hub's own page (the package has no public home yet).
  const origin = { name: 'SpeakerHub', sw: version, ...(extras.configurationUrl ? { url: extras.configurationUrl } : {}) };
  const { options, ids } = selectOptions(extras.media ?? []);
  const idsJson = JSON.stringify(ids);
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
        command_template: ANNOUNCE_TEMPLATE('Text'),
        availability: [bridgeAvailability],
        device: hubDevice,
      },
    },
    {
      // The same in announce Mode duck (a notify has only a message and a title, so the mode is
      // the entity's): the music goes on, lowered, under the voice where the speaker's driver
      // mixes it; elsewhere it is interrupted, and the last announcement says why.
      topic: `${topics.haPrefix}/notify/${hubId}/announce_duck/config`,
      config: {
        name: 'Announce on all speakers (music ducked)',
        unique_id: `${hubId}_announce_duck`,
        default_entity_id: `notify.${hubId}_announce_duck`,
        origin,
        command_topic: topics.request('announce'),
        command_template: ANNOUNCE_TEMPLATE('Text', ', "Mode": "duck"'),
        availability: [bridgeAvailability],
        device: hubDevice,
      },
    },
    {
      // What the last announcement did: done, or failed with the reason (an automation can react).
      topic: `${topics.haPrefix}/sensor/${hubId}/last_announcement/config`,
      config: {
        name: 'Last announcement',
        unique_id: `${hubId}_last_announcement`,
        default_entity_id: `sensor.${hubId}_last_announcement`,
        origin,
        state_topic: topics.announcement,
        value_template: '{{ value_json.state }}',
        json_attributes_topic: topics.announcement,
        json_attributes_template:
          '{{ {"announcement_id": value_json.announcement_id, "reason": value_json.reason, "speakers": value_json.speakers} | tojson }}',
        device_class: 'enum',
        options: ['queued', 'playing', 'waiting_restore', 'done', 'failed'],
        icon: 'mdi:bullhorn',
        availability: [bridgeAvailability],
        device: hubDevice,
      },
    },
  ];
  out.push({
    topic: `${topics.haPrefix}/event/${hubId}/command_error/config`,
    config: {
      ...errorEvent(`${hubId}_command_error`, `event.${hubId}_command_error`, topics.error),
      origin,
      availability: [bridgeAvailability],
      device: hubDevice,
    },
  });
  if (options.length) {
    out.push({
      topic: `${topics.haPrefix}/select/${hubId}/play/config`,
      config: {
        name: 'Play on all speakers',
        unique_id: `${hubId}_play`,
        default_entity_id: `select.${hubId}_play`,
        origin,
        // What plays on every speaker: its library item, else none (also once that play stops).
        state_topic: topics.party,
        value_template: selectState(options),
        command_topic: topics.request('play_hub_media_party_mode'),
        command_template: `{% set ids = ${idsJson} %}{"PersistentID": {{ ids[value] | tojson }}}`,
        options,
        icon: 'mdi:playlist-music',
        availability: [bridgeAvailability],
        device: hubDevice,
      },
    });
  }
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
        default_entity_id: `number.${s.name}_volume`,
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
        default_entity_id: `sensor.${s.name}_state`,
        state_topic: topics.speaker(s.name),
        value_template: '{{ value_json.state }}',
        device_class: 'enum',
        options: ['playing', 'paused', 'stopped', 'announcing'],
        // What plays, how far, and mute, as the state's attributes (media cards and automations read them).
        json_attributes_topic: topics.speaker(s.name),
        json_attributes_template:
          '{{ {"media_title": (value_json.media.title if value_json.media else none), "media_kind": (value_json.media.kind if value_json.media else none), "time_elapsed": value_json.time_elapsed, "muted": value_json.muted, "volume": value_json.volume} | tojson }}',
        icon: 'mdi:speaker',
      },
    });
    out.push({
      topic: `${topics.haPrefix}/switch/${uid}/mute/config`,
      config: {
        ...common,
        name: 'Mute',
        unique_id: `${uid}_mute`,
        default_entity_id: `switch.${s.name}_mute`,
        state_topic: topics.speaker(s.name),
        value_template: "{{ 'ON' if value_json.muted else 'OFF' }}",
        command_topic: set,
        payload_on: '{"mute": true}',
        payload_off: '{"mute": false}',
        state_on: 'ON',
        state_off: 'OFF',
        icon: 'mdi:volume-off',
      },
    });
    out.push({
      topic: `${topics.haPrefix}/switch/${uid}/power/config`,
      config: {
        ...common,
        name: 'Power',
        unique_id: `${uid}_power`,
        default_entity_id: `switch.${s.name}_power`,
        state_topic: topics.speaker(s.name),
        // On while the speaker is reachable, idle or not (before: on only while it played, so every
        // idle speaker read off). Off silences it (set_speaker_power off: what it plays pauses or
        // stops); the hub cannot cut a speaker's power, so the switch reads on again.
        value_template: "{{ 'ON' if value_json.available else 'OFF' }}",
        command_topic: set,
        payload_on: '{"power": "on"}',
        payload_off: '{"power": "off"}',
        state_on: 'ON',
        state_off: 'OFF',
        icon: 'mdi:power',
      },
    });
    if (options.length) {
      out.push({
        topic: `${topics.haPrefix}/select/${uid}/play/config`,
        config: {
          ...common,
          name: 'Play',
          unique_id: `${uid}_play`,
          default_entity_id: `select.${s.name}_play`,
          state_topic: topics.speaker(s.name),
          value_template: selectState(options),
          command_topic: set,
          command_template: `{% set ids = ${idsJson} %}{"play": {"persistent_id": {{ ids[value] | tojson }}}}`,
          options,
          icon: 'mdi:playlist-music',
        },
      });
    }
    for (const action of ['pause', 'resume', 'stop'] as const) {
      out.push({
        topic: `${topics.haPrefix}/button/${uid}/${action}/config`,
        config: {
          ...common,
          name: action[0].toUpperCase() + action.slice(1),
          unique_id: `${uid}_${action}`,
          default_entity_id: `button.${s.name}_${action}`,
          command_topic: set,
          payload_press: JSON.stringify({ state: action }),
          icon: action === 'pause' ? 'mdi:pause' : action === 'resume' ? 'mdi:play' : 'mdi:stop',
        },
      });
    }
    out.push({
      topic: `${topics.haPrefix}/event/${uid}/command_error/config`,
      config: { ...common, ...errorEvent(`${uid}_command_error`, `event.${s.name}_command_error`, topics.speakerError(s.name)) },
    });
    out.push({
      topic: `${topics.haPrefix}/notify/${uid}/announce/config`,
      config: {
        ...common,
        name: 'Announce',
        unique_id: `${uid}_announce`,
        default_entity_id: `notify.${s.name}_announce`,
        command_topic: set,
        command_template: ANNOUNCE_TEMPLATE('announce'),
      },
    });
    out.push({
      topic: `${topics.haPrefix}/notify/${uid}/announce_duck/config`,
      config: {
        ...common,
        name: 'Announce (music ducked)',
        unique_id: `${uid}_announce_duck`,
        default_entity_id: `notify.${s.name}_announce_duck`,
        command_topic: set,
        command_template: ANNOUNCE_TEMPLATE('announce', ', "mode": "duck"'),
      },
    });
  }
  return out;
}

/** A play select's state: the library item playing, else unknown ("None" clears a select's state). */
function selectState(options: string[]): string {
  return `{% set t = value_json.media.title if value_json.media and value_json.media.kind == 'hub' else '' %}{{ t if t in ${JSON.stringify(options)} else 'None' }}`;
}

/**
 * An MQTT event entity for failed commands (command-errors.ts): one event per error, its
 * event_type the error code, its attributes the message, the command and the speaker.
 */
function errorEvent(uniqueId: string, entityId: string, topic: string): Record<string, unknown> {
  return {
    name: 'Command error',
    unique_id: uniqueId,
    default_entity_id: entityId,
    state_topic: topic,
    event_types: ERROR_EVENT_TYPES,
    entity_category: 'diagnostic',
    icon: 'mdi:alert-circle',
  };
}

/** The id a speaker's entities and device are known by in Home Assistant. */
export function speakerUid(hubKey: string, deviceId: string): string {
  return `speakerhub_${hubKey}_${deviceId}`;
}

/** Publishes the discovery configs (retained) now, on new speakers, and when HA comes online. */
export class HaDiscovery {
  constructor(
    private readonly link: Pick<BrokerLink, 'publish'>,
    private readonly topics: Topics,
    private readonly uuid: string,
    private readonly version: string,
    private readonly speakers: () => SpeakerView[],
    private readonly extras: () => Promise<DiscoveryExtras> | DiscoveryExtras = () => ({}),
  ) {}

  async publish(): Promise<void> {
    const extras = await this.extras();
    for (const m of discoveryMessages(this.topics, this.uuid, this.version, this.speakers(), extras)) {
      this.link.publish(m.topic, JSON.stringify(m.config), { qos: 1, retain: true });
    }
  }

  /** A speaker removed for good: its configs are cleared (empty retained), as zigbee2mqtt does. */
  clear(deviceId: string): void {
    const uid = speakerUid(this.uuid.replace(/-/g, '').slice(0, 12), deviceId);
    for (const c of SPEAKER_CONFIGS) this.link.publish(`${this.topics.haPrefix}/${c.replace('%', uid)}/config`, '', { qos: 1, retain: true });
  }

  /** `homeassistant/status` says `online` when HA (re)starts: it wants the configs again. */
  haStatus(payload: Buffer): void {
    if (payload.toString('utf8').trim() === 'online') void this.publish();
  }
}
