import { ERROR_CODES, type ErrorCode } from '../core/errors';
import type { DispatchResult } from '../operations/dispatch';
import { redactText } from '../redact';
import type { BrokerLink } from './broker-link';
import type { Topics } from './topics';

/** The event types of the error event entities: every stable error code, in the table's order. */
export const ERROR_EVENT_TYPES = Object.keys(ERROR_CODES) as ErrorCode[];

/** The most speakers one failed command reports its error to (a DeviceIDList is bounded by the hub's speakers anyway). */
const MAX_SPEAKERS_PER_ERROR = 32;

/** Where a failed command came from: which MQTT command, and the speakers it named (topic names). */
export interface ErrorSource {
  /** The operation (bridge request, channel command), or `set` / `get` / `forget_speaker`. */
  command: string;
  speakers?: string[];
}

/**
 * Every MQTT command that fails, said once more where Home Assistant can show it: on
 * `<base>/bridge/error` and, when the command named speakers, on each one's `<base>/<name>/error`,
 * as `{"event_type": <error code>, "message", "command", "speaker"?, "parameter"?}`: the payload
 * of HA's MQTT event platform (an event entity per hub and per speaker, ha-discovery.ts). The
 * answer itself still goes to the command's own response topic; this is for people watching HA,
 * whose notify and select entities never read the response topics. Not retained: an error is
 * an event, and a retained one would fire again at each HA restart.
 */
export class CommandErrors {
  constructor(
    private readonly link: Pick<BrokerLink, 'publish'>,
    private readonly topics: Topics,
  ) {}

  report(source: ErrorSource, result: DispatchResult): void {
    if (result.ok) return;
    const e = result.error;
    const code: ErrorCode = e.code in ERROR_CODES ? e.code : 'InternalError';
    const base = {
      event_type: code,
      // Messages quote what clients sent (URLs): never a secret in clear.
      message: redactText(e.message),
      command: source.command.slice(0, 100),
      ...(e.parameter ? { parameter: e.parameter } : {}),
    };
    const speakers = [...new Set(source.speakers ?? [])].slice(0, MAX_SPEAKERS_PER_ERROR);
    this.link.publish(this.topics.error, JSON.stringify(speakers.length === 1 ? { ...base, speaker: speakers[0] } : base), { qos: 1 });
    for (const name of speakers) this.link.publish(this.topics.speakerError(name), JSON.stringify({ ...base, speaker: name }), { qos: 1 });
  }
}

/** The DeviceIDs an operation's parameters name (DeviceID, DeviceIDList as text or array), bounded. */
export function namedDeviceIds(params: Record<string, unknown>): string[] {
  const out: string[] = [];
  if (typeof params.DeviceID === 'string' || typeof params.DeviceID === 'number') out.push(String(params.DeviceID));
  const list = params.DeviceIDList;
  const items = Array.isArray(list) ? list : typeof list === 'string' ? list.split(',') : [];
  for (const x of items.slice(0, MAX_SPEAKERS_PER_ERROR)) if (typeof x === 'string' || typeof x === 'number') out.push(String(x).trim());
  return out.filter((x) => /^\d{1,32}$/.test(x));
}
