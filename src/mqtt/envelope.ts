import { errorBody } from '../core/errors';
import type { DispatchResult } from '../operations/dispatch';
import type { WireEvent } from '../extensions/wire-events';

/**
 * The publish/subscribe envelope of compatibility.md: commands carry `Command`,
 * `HKWHubUUID`, `SessionToken` and the REST parameters; responses carry `HKWHubUUID`,
 * `SessionToken`, `ResponseOf` and the result fields; events carry `Event`.
 */

/** Fields of a command that are not operation parameters (and names that must never become keys by assignment). */
const ENVELOPE_FIELDS = new Set(['Command', 'HKWHubUUID', 'transaction', '__proto__', 'constructor', 'prototype']);

export type Parsed =
  /** A command for this hub. */
  | { kind: 'command'; command: string; params: Record<string, unknown>; sessionToken: string; transaction?: unknown }
  /** Not for this hub, or not a command (a response, an event, another hub's traffic): ignored. */
  | { kind: 'ignore' }
  /** Cannot be answered (it names no operation): logged and dropped. */
  | { kind: 'invalid'; why: string };

export function parseMessage(payload: Buffer, uuid: string): Parsed {
  let msg: unknown;
  try {
    msg = JSON.parse(payload.toString('utf8'));
  } catch {
    return { kind: 'invalid', why: 'not JSON' };
  }
  if (typeof msg !== 'object' || msg === null || Array.isArray(msg)) return { kind: 'invalid', why: 'not a JSON object' };
  const m = msg as Record<string, unknown>;
  // Responses and events (the hub's own among them) share the channel with commands.
  if ('ResponseOf' in m || 'Event' in m) return { kind: 'ignore' };
  // Several hubs may share a channel: a command for another hub is not ours to answer.
  if (m.HKWHubUUID !== undefined && m.HKWHubUUID !== uuid) return { kind: 'ignore' };
  if (m.Command === undefined || m.Command === null || m.Command === '') return { kind: 'invalid', why: 'no Command' };
  const command = typeof m.Command === 'string' ? m.Command : JSON.stringify(m.Command);
  const params: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(m)) {
    if (ENVELOPE_FIELDS.has(k)) continue;
    // JSON clients naturally send a list as an array; the API's form is comma-separated text.
    params[k] = k === 'DeviceIDList' && Array.isArray(v) && v.every((x) => typeof x === 'string' || typeof x === 'number') ? v.join(',') : v;
  }
  const given = m.SessionToken ?? m.SesssionToken ?? m.SessionID;
  return {
    kind: 'command',
    command,
    params,
    sessionToken: typeof given === 'string' || typeof given === 'number' ? String(given) : '',
    ...('transaction' in m ? { transaction: m.transaction } : {}),
  };
}

/** A response: the envelope fields, then the result (or the same error body as REST gives). */
export function responseMessage(
  uuid: string,
  command: string,
  sessionToken: string,
  result: DispatchResult,
  transaction?: unknown,
): Record<string, unknown> {
  const out: Record<string, unknown> = {
    HKWHubUUID: uuid,
    SessionToken: sessionToken,
    ResponseOf: command,
    ...(result.ok ? result.body : errorBody(result.error)),
  };
  if (transaction !== undefined) out.transaction = transaction;
  return out;
}

/**
 * Events on the channel. Top-level values are strings, as in every response of the API
 * (compatibility.md); events belong to no session, so their SessionToken is empty.
 */
export function eventMessage(uuid: string, e: WireEvent): Record<string, unknown> | undefined {
  const base = { HKWHubUUID: uuid, SessionToken: '' };
  switch (e.type) {
    case 'playbackTime':
      return { Event: 'PlaybackTimeChanged', ...base, PlaybackTime: String(e.data.timeElapsed), DeviceIDList: e.data.deviceIds.join(',') };
    case 'device':
      return { Event: 'DeviceStateUpdated', ...base, Reason: e.data.reason, DeviceID: e.data.device.DeviceID, DeviceName: e.data.device.DeviceName };
    case 'playbackState':
      // Beyond the spec's two events: lets a client follow playback without polling playback_status.
      return {
        Event: 'PlaybackStateChanged',
        ...base,
        PlaybackState: e.data.state,
        TimeElapsed: String(e.data.timeElapsed),
        DeviceIDList: e.data.deviceIds.join(','),
        ...(e.data.reason ? { StopReason: e.data.reason } : {}),
      };
    default:
      return undefined;
  }
}

/**
 * The spec's NetworkUnavailable reason: the hub's network or broker link was lost (Lost, heard
 * only by clients that still reach the hub, e.g. on its own host) or is back (Restored).
 * `Network` is beyond the spec: it tells the two apart.
 */
export function networkEvent(uuid: string, network: 'Lost' | 'Restored'): Record<string, unknown> {
  return { Event: 'DeviceStateUpdated', HKWHubUUID: uuid, SessionToken: '', Reason: 'NetworkUnavailable', Network: network };
}

/** What the hub says on the channel each time it connects. */
export function announceMessage(uuid: string, version: string): Record<string, unknown> {
  return { Event: 'HubOnline', HKWHubUUID: uuid, SessionToken: '', Version: version };
}
