/**
 * The UPnP/DLNA MediaRenderer driver.
 *
 * Device records (docs/drivers/upnp.md):
 *
 * | Field | UPnP renderers |
 * |---|---|
 * | `DeviceID` | 14 digits derived from the renderer's UDN (`digitId('upnp:' + UDN in lower case)`): stable across restarts and address changes, never equal to another driver's |
 * | `DeviceName` | `friendlyName` from the device description |
 * | `GroupName` / `GroupID` | the renderer's own name / 10 digits from its UDN: every renderer is a group of its own (UPnP has no speaker groups) |
 * | `ModelName` | `modelName` (else `manufacturer`) |
 * | `Version` | a firmware element where the description has one (`firmwareVersion`, `softwareVersion`, `displayVersion`, vendor `X_…` variants), else `modelNumber`, else `""` |
 * | `Role` | `21`, the stand-alone speaker value the hub uses for every driver (UPnP has no roles) |
 * | `MacAddress` | `""` unless the description carries a MAC element (`macAddress`, `MACAddress`, `X_MAC…`), then upper-case colon form. UPnP itself has no field for it, and the hub does not ARP |
 * | `IPAddress` / `Port` | host and port of the description URL (where the renderer answers control requests) |
 * | `WifiSignalStrength` | `0`: UPnP reports no signal strength |
 * | `Volume` | RenderingControl `Volume` (Master) mapped from the renderer's range (read from its SCPD, usually 0–100) to 0–50; `0` while the renderer is muted |
 */
export { UpnpDriver, type UpnpDriverOptions } from './driver';
export { UpnpSpeaker, upnpDeviceId } from './renderer';
export { UpnpConfigSchema, type UpnpConfig } from './config';
export { fetchDescription, parseDescription, MEDIA_RENDERER, type RendererDescription } from '../../protocols/upnp/description-parse';
export { soapCall, SoapFault } from '../../protocols/upnp/soap-client';
