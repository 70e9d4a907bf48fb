import { isHubError } from '../core/errors';
import type { Hap, Logging } from './homebridge-api';

/** The HAP status a failed hub operation answers with, so HomeKit shows the right thing. */
export function hapStatusOf(hap: Hap, e: unknown): number {
  if (!isHubError(e)) return hap.HAPStatus.SERVICE_COMMUNICATION_FAILURE;
  switch (e.code) {
    case 'InvalidParameter':
      return hap.HAPStatus.INVALID_VALUE_IN_REQUEST;
    case 'PriorityTooLow':
    case 'NotResumable':
    case 'NotPlaying':
      return hap.HAPStatus.NOT_ALLOWED_IN_CURRENT_STATE;
    default:
      return hap.HAPStatus.SERVICE_COMMUNICATION_FAILURE;
  }
}

/**
 * Wraps a characteristic handler: whatever it throws (or rejects with) becomes a HAP status
 * error, logged once; nothing unhandled ever reaches Homebridge.
 */
export function guard<A extends unknown[], R>(hap: Hap, log: Logging, what: string, fn: (...args: A) => R | Promise<R>): (...args: A) => Promise<R> {
  return async (...args: A) => {
    try {
      return await fn(...args);
    } catch (e) {
      if (e instanceof hap.HapStatusError) throw e;
      const message = e instanceof Error ? e.message : String(e);
      log.warn(`${what}: ${message}`);
      throw new hap.HapStatusError(hapStatusOf(hap, e));
    }
  };
}

/** A value read from a speaker that is not reachable now: HomeKit shows "No Response". */
export function unreachable(hap: Hap): Error {
  return new hap.HapStatusError(hap.HAPStatus.SERVICE_COMMUNICATION_FAILURE);
}
