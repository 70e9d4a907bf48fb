import { digitId, type SpeakerInfo } from '../driver';
import type { RendererDescription } from '../../protocols/upnp/description-parse';

/** The spec defines no Role values; 21 (stand-alone speaker) is what the original hub reports. */
const ROLE = 21;

/** The DeviceID: 'upnp:' keeps it apart from every other driver's ids; UUIDs compare case-blind. */
export function upnpDeviceId(udn: string): string {
  return digitId(`upnp:${udn.trim().toLowerCase()}`);
}

/** The hub's device record fields, from a device description (index.ts documents each). */
export function infoOf(d: RendererDescription): SpeakerInfo {
  return {
    name: d.friendlyName,
    // UPnP has no speaker groups: each renderer plays on its own, so it is a group of one.
    groupName: d.friendlyName,
    groupId: digitId(`upnp-group:${d.udn.trim().toLowerCase()}`, 10),
    modelName: d.modelName || d.manufacturer,
    version: d.firmware,
    role: ROLE,
    macAddress: d.macAddress,
    ipAddress: d.address,
    port: d.port,
    // UPnP reports no signal strength; the interface says 0 means "cannot tell".
    wifiSignalStrength: 0,
  };
}

/** The fields that differ, for the speaker's 'info' event. */
export function diffInfo(a: SpeakerInfo, b: SpeakerInfo): Partial<SpeakerInfo> {
  const out: Partial<SpeakerInfo> = {};
  for (const k of Object.keys(b) as (keyof SpeakerInfo)[]) {
    if (a[k] !== b[k]) (out as Record<string, unknown>)[k] = b[k];
  }
  return out;
}
