import { createHash } from 'node:crypto';
import type { EsphomeHubPort, SpeakerView } from './hub-port';
import { PlayerState, type PlayerStateValue } from './api-proto';

/**
 * What the hub is as an ESPHome device: the main device (the hub, whose one media_player is
 * "All speakers", the party) and one sub-device per speaker (api.proto DeviceInfo, 2025.7+),
 * each with its media_player entity and its area hint (esphome.areas). Ids and keys are
 * hashes of the DeviceID, so a speaker keeps its Home Assistant device and entity across
 * restarts; a collision (rare) takes the next free number in DeviceID order.
 */

export interface EntityDef {
  key: number;
  /** 0: the hub device; otherwise the speaker's sub-device. */
  deviceId: number;
  objectId: string;
  /**
   * 'Speaker' for a speaker's entity: Home Assistant prefixes the device's name ("Kitchen
   * Speaker", media_player.kitchen_speaker). Not '' (an ESPHome entity named after its
   * device): some clients (esphome-client) drop unnamed entities.
   */
  name: string;
  /** The speaker it drives, or 'party'. */
  target: string;
}

export interface DeviceModel {
  devices: { device_id: number; name: string; area_id: number }[];
  areas: { area_id: number; name: string }[];
  entities: EntityDef[];
  byKey: Map<number, EntityDef>;
  /** A fingerprint of all of it: when it changes, connected clients must list again. */
  signature: string;
}

export interface EntityState {
  state: PlayerStateValue;
  volume: number;
  muted: boolean;
}

export const PARTY = 'party';

function hash32(s: string): number {
  return createHash('sha256').update(s).digest().readUInt32BE(0) || 1;
}

/** A stable, locally administered unicast MAC for a seed (the hub's UUID). */
export function macFor(seed: string): string {
  const b = createHash('sha256').update(`esphome-mac:${seed}`).digest().subarray(0, 6);
  b[0] = (b[0] & 0xfc) | 0x02;
  return [...b].map((x) => x.toString(16).padStart(2, '0').toUpperCase()).join(':');
}

function slug(s: string): string {
  return (
    s
      .toLowerCase()
      .normalize('NFKD')
      .replace(/[^a-z0-9]+/g, '_')
      .replace(/^_+|_+$/g, '')
      .slice(0, 100) || 'speaker'
  );
}

function unique(taken: Set<number>, n: number): number {
  let v = n >>> 0 || 1;
  while (taken.has(v)) v = (v + 1) >>> 0 || 1;
  taken.add(v);
  return v;
}

/**
 * The area hint of a speaker: esphome.areas by DeviceID, then by name. None otherwise: a
 * speaker's GroupName is mostly its driver's family ("Virtual Speakers", "AirPlay"), no room.
 */
export function areaFor(areas: Record<string, string>, s: SpeakerView): string {
  return areas[s.id] ?? areas[s.name] ?? '';
}

export function buildModel(speakers: SpeakerView[], areaOf: (s: SpeakerView) => string = () => ''): DeviceModel {
  const sorted = [...speakers].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const keys = new Set<number>();
  const deviceIds = new Set<number>([0]);
  const areaIds = new Set<number>();
  const objectIds = new Set<string>();
  const areas = new Map<string, number>();
  const devices: DeviceModel['devices'] = [];
  const entities: EntityDef[] = [
    { key: unique(keys, hash32('entity:party')), deviceId: 0, objectId: 'all_speakers', name: 'All speakers', target: PARTY },
  ];
  objectIds.add('all_speakers');
  for (const s of sorted) {
    let areaId = 0;
    const area = areaOf(s);
    if (area) {
      areaId = areas.get(area) ?? unique(areaIds, hash32(`area:${area}`));
      areas.set(area, areaId);
    }
    const deviceId = unique(deviceIds, hash32(`device:${s.id}`));
    devices.push({ device_id: deviceId, name: s.name.slice(0, 120), area_id: areaId });
    let objectId = slug(s.name);
    if (objectIds.has(objectId)) objectId = `${objectId}_${s.id.slice(-6)}`;
    objectIds.add(objectId);
    entities.push({ key: unique(keys, hash32(`entity:${s.id}`)), deviceId, objectId, name: 'Speaker', target: s.id });
  }
  const areaList = [...areas].map(([name, area_id]) => ({ area_id, name: name.slice(0, 120) }));
  const signature = JSON.stringify([devices, areaList, entities.map((e) => [e.key, e.deviceId, e.objectId])]);
  return { devices, areas: areaList, entities, byKey: new Map(entities.map((e) => [e.key, e])), signature };
}

/** A speaker's media_player state: an announcement first, then its zone's playback. */
export function stateOf(hub: EsphomeHubPort, target: string): EntityState {
  if (target === PARTY) {
    const active = hub.speakers().filter((s) => s.active);
    const announcing = active.length > 0 && active.some((s) => hub.isAnnouncing(s.id));
    const zone = hub.playback();
    const volume = active.length ? Math.max(...active.map((s) => s.volume)) / 50 : 0;
    const muted = active.length > 0 && active.every((s) => hub.muted(s.id));
    return { state: announcing ? PlayerState.ANNOUNCING : playerState(zone.state), volume, muted };
  }
  const s = hub.speaker(target);
  if (!s) return { state: PlayerState.IDLE, volume: 0, muted: false };
  const state = hub.isAnnouncing(s.id) ? PlayerState.ANNOUNCING : playerState(hub.playback(s.id).state);
  return { state, volume: s.volume / 50, muted: hub.muted(s.id) };
}

function playerState(p: string): PlayerStateValue {
  return p === 'PlayerStatePlaying' ? PlayerState.PLAYING : p === 'PlayerStatePaused' ? PlayerState.PAUSED : PlayerState.IDLE;
}

/**
 * Home Assistant's MediaPlayerEntityFeature bits this entity has: pause, volume set/mute/step,
 * play media, stop, play, browse media (HA's own media sources, proxied to the speaker) and
 * media announce (tts.speak's announcement flag).
 */
export const FEATURE_FLAGS = 1 | 4 | 8 | 512 | 1024 | 4096 | 16384 | 131072 | 1048576;

/**
 * The formats Home Assistant converts media to before handing it over: MP3, which every
 * driver of the hub plays (virtual, UPnP, Snapcast, Squeezebox, MPD and AirPlay through the
 * hub's decoder); stereo for music, mono for announcements (speech, smaller, sooner).
 */
export const SUPPORTED_FORMATS = [
  { format: 'mp3', sample_rate: 48000, num_channels: 2, purpose: 0, sample_bytes: 0 },
  { format: 'mp3', sample_rate: 48000, num_channels: 1, purpose: 1, sample_bytes: 0 },
];
