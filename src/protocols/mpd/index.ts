export { MpdClient, DEFAULT_MPD_LIMITS, type MpdClientOptions, type MpdLimits, type MpdResponse } from './client';
export { MpdAckError, MpdConnectionError, parseAck, type MpdErrorCode } from './errors';
export { MpdLineReader } from './reader';
export { arg, parseFields } from './text';
