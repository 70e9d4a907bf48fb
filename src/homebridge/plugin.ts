import { PLATFORM_NAME, type API } from './homebridge-api';
import { SpeakerHubPlatform } from './platform';

/** Homebridge's plugin initializer: registers the SpeakerHub dynamic platform. */
export function initializePlugin(api: API): void {
  api.registerPlatform(PLATFORM_NAME, SpeakerHubPlatform);
}
