import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { deviceDescriptionXml } from '../protocols/upnp/description';
import type { RendererIdentity } from './renderer';
import { SERVICES, SERVICE_NAMES } from './scpd';
import { MEDIA_RENDERER } from '../protocols/upnp/description';

/** Device descriptions, UDNs and the hub-level icon of the published renderers. */

export const MODEL_NAME = 'SpeakerHub DLNA renderer';

/**
 * A stable UDN: the same hub (its UUID, kept in the data folder), the same speaker (its
 * DeviceID) and the same kind of renderer give the same UDN on every start, so control points
 * keep their entries; two hubs never share one.
 */
export function rendererUdn(hubUuid: string, kind: RendererIdentity['kind'] | 'library', deviceId = ''): string {
  const h = createHash('sha1').update(`speakerhub-dlna:${hubUuid}:${kind}:${deviceId}`).digest();
  // Shaped as a name-based (version 5) UUID.
  h[6] = (h[6] & 0x0f) | 0x50;
  h[8] = (h[8] & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `uuid:${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}

export function rendererPath(slug: string): string {
  return `/r/${slug}`;
}

export function deviceDescription(id: RendererIdentity, friendlyName: string, version: string): string {
  const base = rendererPath(id.slug);
  const what = id.kind === 'all' ? 'every speaker (party mode)' : id.kind === 'announce' ? 'announcements on one speaker' : 'one speaker';
  return deviceDescriptionXml({
    deviceType: MEDIA_RENDERER,
    friendlyName,
    manufacturer: 'SpeakerHub',
    modelDescription: `SpeakerHub renderer: ${what}`,
    modelName: MODEL_NAME,
    modelNumber: version,
    serialNumber: id.deviceId ?? 'all',
    udn: id.udn,
    dlnaDoc: 'DMR-1.50',
    icon: { url: '/icon.png', width: 48, height: 48 },
    services: SERVICE_NAMES.map((n) => ({
      serviceType: SERVICES[n].type,
      id: SERVICES[n].id,
      scpdUrl: `/scpd/${n}.xml`,
      controlUrl: `${base}/${n}/control`,
      eventSubUrl: `${base}/${n}/event`,
    })),
  });
}

// ---- the icon: a 48×48 PNG of a speaker, drawn here so no binary file ships ----------------

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(b: Buffer): number {
  let c = 0xffffffff;
  for (const x of b) c = CRC_TABLE[(c ^ x) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}

function drawIcon(): Buffer {
  const size = 48;
  const rows: Buffer[] = [];
  for (let y = 0; y < size; y++) {
    const row = Buffer.alloc(1 + size * 3);
    for (let x = 0; x < size; x++) {
      const dx = x - 23.5;
      const dy = y - 28;
      const cone = Math.hypot(dx, dy) < 12;
      const tweeter = Math.hypot(dx, y - 11) < 5;
      const cabinet = x >= 8 && x < 40 && y >= 2 && y < 46;
      const [r, g, b] = cone || tweeter ? [240, 240, 240] : cabinet ? [40, 90, 160] : [255, 255, 255];
      row[1 + x * 3] = r;
      row[2 + x * 3] = g;
      row[3 + x * 3] = b;
    }
    rows.push(row);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.concat(rows))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

let icon: Buffer | undefined;
export function iconPng(): Buffer {
  icon ??= drawIcon();
  return icon;
}
