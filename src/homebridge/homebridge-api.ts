/**
 * The parts of Homebridge's plugin API (1.x and 2.x alike) the plugin uses, typed here so the
 * package needs no homebridge dependency: Homebridge hands its own API object at run time.
 */

export interface Logging {
  info(message: string, ...args: unknown[]): void;
  warn(message: string, ...args: unknown[]): void;
  error(message: string, ...args: unknown[]): void;
  debug(message: string, ...args: unknown[]): void;
}

export type CharacteristicValue = boolean | number | string;

export interface Characteristic {
  readonly UUID: string;
  value: unknown;
  onGet(handler: () => CharacteristicValue | Promise<CharacteristicValue>): Characteristic;
  onSet(handler: (value: unknown) => void | Promise<void>): Characteristic;
  updateValue(value: CharacteristicValue | Error): Characteristic;
  setProps(props: Record<string, unknown>): Characteristic;
}

/** A characteristic type (hap.Characteristic.On and friends): a class with a static UUID. */
export interface CharacteristicType {
  readonly UUID: string;
}

export interface Service {
  readonly UUID: string;
  readonly subtype?: string;
  readonly displayName: string;
  getCharacteristic(type: CharacteristicType): Characteristic;
  setCharacteristic(type: CharacteristicType, value: CharacteristicValue): Service;
  updateCharacteristic(type: CharacteristicType, value: CharacteristicValue | Error): Service;
  testCharacteristic(type: CharacteristicType): boolean;
  addOptionalCharacteristic(type: CharacteristicType): void;
  setPrimaryService(primary?: boolean): void;
}

export interface ServiceType {
  readonly UUID: string;
  new (displayName?: string, subtype?: string): Service;
}

export interface PlatformAccessory {
  readonly UUID: string;
  displayName: string;
  context: Record<string, unknown>;
  readonly services: Service[];
  getService(type: ServiceType | string): Service | undefined;
  getServiceById(type: ServiceType | string, subtype: string): Service | undefined;
  addService(service: Service | ServiceType, ...args: unknown[]): Service;
  removeService(service: Service): void;
}

export interface HapStatusErrorType {
  new (status: number): Error;
}

export interface Hap {
  readonly Service: Record<'AccessoryInformation' | 'Lightbulb' | 'Fan' | 'Switch' | 'Speaker', ServiceType>;
  readonly Characteristic: Record<
    | 'On'
    | 'Brightness'
    | 'RotationSpeed'
    | 'Mute'
    | 'Volume'
    | 'StatusFault'
    | 'Name'
    | 'Manufacturer'
    | 'Model'
    | 'SerialNumber'
    | 'FirmwareRevision'
    | 'ConfiguredName',
    CharacteristicType
  >;
  readonly HapStatusError: HapStatusErrorType;
  readonly HAPStatus: Record<
    | 'SUCCESS'
    | 'SERVICE_COMMUNICATION_FAILURE'
    | 'RESOURCE_BUSY'
    | 'INVALID_VALUE_IN_REQUEST'
    | 'NOT_ALLOWED_IN_CURRENT_STATE'
    | 'OPERATION_TIMED_OUT',
    number
  >;
  readonly uuid: { generate(data: string): string };
}

export interface PlatformConfig {
  platform: string;
  name?: string;
  [key: string]: unknown;
}

export interface API {
  readonly version: number;
  readonly serverVersion: string;
  readonly hap: Hap;
  readonly platformAccessory: new (displayName: string, uuid: string) => PlatformAccessory;
  readonly user: { storagePath(): string };
  registerPlatform(platformName: string, constructor: new (log: Logging, config: PlatformConfig, api: API) => unknown): void;
  registerPlatformAccessories(pluginIdentifier: string, platformName: string, accessories: PlatformAccessory[]): void;
  unregisterPlatformAccessories(pluginIdentifier: string, platformName: string, accessories: PlatformAccessory[]): void;
  updatePlatformAccessories(accessories: PlatformAccessory[]): void;
  on(event: 'didFinishLaunching' | 'shutdown', listener: () => void): unknown;
}

export const PLUGIN_NAME = 'homebridge-speakerhub';
export const PLATFORM_NAME = 'SpeakerHub';
