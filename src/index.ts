/** SpeakerHub as a library: embed a hub (createHub) or reuse its parts. */
// First, before anything imports zod: its message locales load on first use, not all with zod.
import './util/zod-locales';
export { createHub, SpeakerHub, type HubOptions } from './hub';
export { parseConfig, ConfigSchema, ConfigError, type HubConfig, type HubConfigInput } from './hub-config';
export { loadConfig } from './config/load';
export { HubCore } from './core/hub-core';
export type { HubExtension, ExtensionContext } from './extensions/extension';
export type { WireEvent, WireEventType, SubscribeOptions, WireSubscription } from './extensions/wire-events';
export { HubError, ERROR_CODES, errorBody, type ErrorCode, type ErrorBody } from './core/errors';
export { ManualClock, systemClock, type Clock } from './core/clock';
export type { HubEvents, DeviceRecord, PlaybackSnapshot, PlaybackState, DeviceReason, AnnouncementEvent, AnnouncementState } from './core/events';
export {
  OPERATIONS,
  OPERATIONS_BY_NAME,
  parameterNames,
  isOperationName,
  type Operation,
  type OperationName,
  type OperationOf,
  type ParamsOf,
  type ResponseOf,
} from './operations/table';
export { dispatch, type DispatchResult, type TypedDispatchResult } from './operations/dispatch';
export type { Speaker, SpeakerDriver, SpeakerInfo, MediaRequest } from './drivers/driver';
export { VirtualDriver } from './drivers/virtual/virtual-driver';
export { VirtualSpeaker } from './drivers/virtual/virtual-speaker';
export { UpnpDriver, UpnpConfigSchema, type UpnpConfig } from './drivers/upnp';
export { SnapcastDriver, SnapcastConfigSchema, type SnapcastConfig } from './drivers/snapcast';
export { SpeakerHubClient } from './rest-client/client';
export { HubEventStream, type EventStreamOptions, type StreamEvent } from './rest-client/event-stream';
export { VERSION } from './version';
export type { MqttStatus } from './mqtt/extension';
export type { FrontEndDefinition } from './extensions/front-end';

/*
 * The front ends' classes, loaded on first use: a hub composes its front ends from its config
 * (src/front-ends.ts), so most library users never touch these, and a hub that runs no MQTT
 * should not carry aedes, mqtt.js and ws in its memory because the package exports them.
 * The plain `exports.X =` assignment is for Node's CommonJS lexer: it names the export for
 * `import { X } from 'homebridge-speakerhub'` (index.mjs); the getter then replaces it.
 */
import type * as MqttModule from './mqtt/extension';
import type * as CloudLinkModule from './cloud-link/link-extension';
export type MqttExtension = MqttModule.MqttExtension;
export declare const MqttExtension: typeof MqttModule.MqttExtension;
export type CloudLinkExtension = CloudLinkModule.CloudLinkExtension;
export declare const CloudLinkExtension: typeof CloudLinkModule.CloudLinkExtension;
exports.MqttExtension = exports.CloudLinkExtension = undefined;
lazyExport('MqttExtension', () => (require('./mqtt/extension') as typeof MqttModule).MqttExtension);
lazyExport('CloudLinkExtension', () => (require('./cloud-link/link-extension') as typeof CloudLinkModule).CloudLinkExtension);

function lazyExport(name: string, load: () => unknown): void {
  Object.defineProperty(exports, name, { enumerable: true, configurable: true, get: load });
}
