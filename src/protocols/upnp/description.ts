import { escapeXml } from './xml';

/** UPnP device descriptions (UDA 1.0), written from data: shared by the DLNA renderers and the DLNA MediaServer. */

export interface DescribedService {
  type: string;
  id: string;
  scpdUrl: string;
  controlUrl: string;
  eventSubUrl: string;
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
        `<service><serviceType>${escapeXml(s.type)}</serviceType><serviceId>${escapeXml(s.id)}</serviceId>` +
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
