import { AV_TRANSPORT, MEDIA_RENDERER, RENDERING_CONTROL, type ServiceEndpoint } from './description';
import { httpRequest } from './http-client';
import { parseVolumeRange } from './scpd';
import { child, childNames, children, parseXml, text, type XmlValue } from './xml';

/**
 * Reading a MediaRenderer's device description (the upnp driver, of the renderers it
 * controls); the writing side is description.ts. Parsed under the one hardened XML policy.
 */

export { MEDIA_RENDERER, type ServiceEndpoint };

/** What the driver needs of a renderer's device description. */
export interface RendererDescription {
  /** The description URL it was read from. */
  location: string;
  /** e.g. uuid:4d696e69-444c-164e-9d41-b827eb000001 */
  udn: string;
  friendlyName: string;
  manufacturer: string;
  modelName: string;
  modelNumber: string;
  /** Firmware/software version where the description gives one, else modelNumber, else ''. */
  firmware: string;
  /** Upper-case colon form, or '' (the UPnP description has no standard field for it). */
  macAddress: string;
  /** Host and port of the description URL: where the renderer answers. */
  address: string;
  port: number;
  avTransport: ServiceEndpoint;
  renderingControl?: ServiceEndpoint;
}

/** Vendor elements some renderers add with their firmware version (namespace prefixes are dropped). */
const FIRMWARE_FIELDS = /^(?:X_)?(?:firmware(?:Version|Revision)?|softwareVersion|displayVersion|swVersion)$/i;
const MAC_FIELDS = /^(?:X_)?MAC(?:Address)?$/i;
const MAC_VALUE = /^([0-9a-f]{2})[:-]?([0-9a-f]{2})[:-]?([0-9a-f]{2})[:-]?([0-9a-f]{2})[:-]?([0-9a-f]{2})[:-]?([0-9a-f]{2})$/i;

/** Throws when the document is not a MediaRenderer with an AVTransport service. */
export function parseDescription(xml: string, location: string): RendererDescription {
  const doc = parseXml(xml);
  const root = child(doc, 'root');
  if (!root) throw new Error('not a UPnP device description (no <root>)');
  const device = findRenderer(child(root, 'device'));
  if (!device) throw new Error('the description has no MediaRenderer device');
  const base = text(child(root, 'URLBase')) || location;
  const services = children(child(device, 'serviceList'), 'service').map((s) => ({
    serviceType: text(child(s, 'serviceType')),
    controlUrl: resolveUrl(text(child(s, 'controlURL')), base),
    eventSubUrl: resolveUrl(text(child(s, 'eventSubURL')), base),
    scpdUrl: resolveUrl(text(child(s, 'SCPDURL')), base),
  }));
  const avTransport = services.find((s) => s.serviceType.startsWith(AV_TRANSPORT));
  if (!avTransport) throw new Error('the MediaRenderer has no AVTransport service');
  const udn = text(child(device, 'UDN')).trim();
  if (!udn) throw new Error('the MediaRenderer has no UDN');
  const url = new URL(location);
  const modelNumber = text(child(device, 'modelNumber'));
  return {
    location,
    udn,
    friendlyName: text(child(device, 'friendlyName')) || udn,
    manufacturer: text(child(device, 'manufacturer')),
    modelName: text(child(device, 'modelName')),
    modelNumber,
    firmware: findField(device, FIRMWARE_FIELDS) || modelNumber,
    macAddress: normalizeMac(findField(device, MAC_FIELDS)),
    address: url.hostname.replace(/^\[|\]$/g, ''),
    port: Number(url.port || 80),
    avTransport,
    renderingControl: services.find((s) => s.serviceType.startsWith(RENDERING_CONTROL)),
  };
}

/** The root device if it is a MediaRenderer, else the first embedded one (AV receivers nest them). */
function findRenderer(device: XmlValue | undefined): XmlValue | undefined {
  if (!device) return undefined;
  if (text(child(device, 'deviceType')).startsWith('urn:schemas-upnp-org:device:MediaRenderer:')) return device;
  for (const d of children(child(device, 'deviceList'), 'device')) {
    const found = findRenderer(d);
    if (found) return found;
  }
  return undefined;
}

function findField(device: XmlValue, pattern: RegExp): string {
  const name = childNames(device).find((n) => pattern.test(n));
  return name ? text(child(device, name)).trim() : '';
}

function normalizeMac(value: string): string {
  const m = MAC_VALUE.exec(value);
  return m ? m.slice(1, 7).join(':').toUpperCase() : '';
}

function resolveUrl(ref: string, base: string): string {
  try {
    return new URL(ref, base).toString();
  } catch {
    return ref;
  }
}

export interface FetchOptions {
  timeoutMs: number;
  localAddress?: string;
}

/** Reads and parses a description; also reports our address on that connection (for GENA callbacks). */
export async function fetchDescription(
  location: string,
  options: FetchOptions,
): Promise<{ description: RendererDescription; localAddress?: string }> {
  const res = await httpRequest(location, { timeoutMs: options.timeoutMs, localAddress: options.localAddress, headers: { Accept: 'text/xml' } });
  if (res.status !== 200) throw new Error(`description answered HTTP ${res.status}`);
  return { description: parseDescription(res.body, location), localAddress: res.localAddress };
}

/** Reads the RenderingControl SCPD's volume range; undefined when the renderer does not say. */
export async function fetchVolumeRange(scpdUrl: string, options: FetchOptions): Promise<{ min: number; max: number } | undefined> {
  try {
    const res = await httpRequest(scpdUrl, { timeoutMs: options.timeoutMs, localAddress: options.localAddress });
    return res.status === 200 ? parseVolumeRange(res.body) : undefined;
  } catch {
    return undefined;
  }
}
