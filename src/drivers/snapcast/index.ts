export { SnapcastDriver, type SnapcastDriverOptions } from './driver';
export { SnapcastConfigSchema, SnapcastServerSchema, type SnapcastConfig, type SnapcastServerConfig } from './config';
export { SnapcastSpeaker, hubVolume, snapVolume, snapcastDeviceId } from './client-speaker';
