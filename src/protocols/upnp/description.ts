import { escapeXml } from './xml';

/**
 * UPnP device descriptions (UDA 1.0): written from data here (the DLNA renderers and the DLNA
 * MediaServer), read by description-parse.ts (the upnp driver, of the renderers it controls).
 * The types of a service's endpoints are the same on both sides.
 */

export const MEDIA_RENDERER = 'urn:schemas-upnp-org:device:MediaRenderer:1';
export const MEDIA_SERVER = 'urn:schemas-upnp-org:device:MediaServer:1';
/** Service type prefixes (any version). */
export const AV_TRANSPORT = 'urn:schemas-upnp-org:service:AVTransport:';
export const RENDERING_CONTROL = 'urn:schemas-upnp-org:service:RenderingControl:';

/** A service's endpoints, as a description lists them (absolute URLs when parsed; paths when written). */
export interface ServiceEndpoint {
  /** e.g. urn:schemas-upnp-org:service:AVTransport:1 */
  serviceType: string;
  controlUrl: string;
  eventSubUrl: string;
  scpdUrl: string;
}

/** A service of a device the hub publishes: its endpoints and its serviceId. */
export interface DescribedService extends ServiceEndpoint {
  id: string;
}

export interface DeviceDescription {
  deviceType: string;
  friendlyName: string;
  manufacturer: string;
  modelDescription: string;
  modelName: string;
  modelNumber: string;
  serialNumber: string;
  udn: string;
  /** dlna:X_DLNADOC, e.g. DMR-1.50 or DMS-1.50. */
  dlnaDoc?: string;
  /** One PNG icon: its URL and size. */
  icon?: { url: string; width: number; height: number };
  services: DescribedService[];
}

export function deviceDescriptionXml(d: DeviceDescription): string {
  const services = d.services
    .map(
      (s) =>
        `<service><serviceType>${escapeXml(s.serviceType)}</serviceType><serviceId>${escapeXml(s.id)}</serviceId>` +
        `<SCPDURL>${escapeXml(s.scpdUrl)}</SCPDURL><controlURL>${escapeXml(s.controlUrl)}</controlURL><eventSubURL>${escapeXml(s.eventSubUrl)}</eventSubURL></service>`,
    )
    .join('');
  const icon = d.icon
    ? `<iconList><icon><mimetype>image/png</mimetype><width>${d.icon.width}</width><height>${d.icon.height}</height><depth>24</depth><url>${escapeXml(d.icon.url)}</url></icon></iconList>`
    : '';
  return (
    '<?xml version="1.0" encoding="utf-8"?>\n' +
    '<root xmlns="urn:schemas-upnp-org:device-1-0" xmlns:dlna="urn:schemas-dlna-org:device-1-0">' +
    '<specVersion><major>1</major><minor>0</minor></specVersion><device>' +
    `<deviceType>${escapeXml(d.deviceType)}</deviceType>` +
    `<friendlyName>${escapeXml(d.friendlyName)}</friendlyName>` +
    `<manufacturer>${escapeXml(d.manufacturer)}</manufacturer>` +
    `<modelDescription>${escapeXml(d.modelDescription)}</modelDescription>` +
    `<modelName>${escapeXml(d.modelName)}</modelName><modelNumber>${escapeXml(d.modelNumber)}</modelNumber>` +
    `<serialNumber>${escapeXml(d.serialNumber)}</serialNumber>` +
    `<UDN>${escapeXml(d.udn)}</UDN>` +
    (d.dlnaDoc ? `<dlna:X_DLNADOC>${escapeXml(d.dlnaDoc)}</dlna:X_DLNADOC>` : '') +
    icon +
    `<serviceList>${services}</serviceList>` +
    '</device></root>\n'
  );
}
