import { redactText } from '../redact';

/**
 * Typed hub errors with stable codes. Every front end (REST, MQTT, cloud, Node-RED) maps a
 * failure to `{ Result: "false", ErrorCode, ErrorMessage }`; the code is the contract, the
 * message is for humans and may change.
 *
 * `status` is the HTTP status the REST server uses. Operation failures answer 200 so that
 * existing clients, which only look at `Result`, keep working; malformed requests get 4xx.
 */
export const ERROR_CODES = {
  InvalidParameter: { status: 400, description: 'A parameter is missing or malformed; the message names it.' },
  UnsupportedScheme: { status: 400, description: 'MediaUrl uses a scheme other than http, https, rtsp, rstp or mms.' },
  MediaUrlRefused: { status: 400, description: 'MediaUrl points at a loopback or link-local address, which webMedia.refuseLocalAddresses forbids.' },
  TextTooLong: { status: 400, description: 'Text is longer than the configured maximum (tts.maxTextLength).' },
  UnknownOperation: { status: 404, description: 'No operation of that name exists.' },
  MethodNotAllowed: { status: 405, description: 'Operations are GET only (HEAD would run them without showing the result).' },
  Unauthorized: { status: 401, description: 'The bearer token is missing or wrong.' },
  SessionNotFound: { status: 200, description: 'The SessionToken is unknown, closed or expired.' },
  DeviceNotFound: { status: 200, description: 'No speaker has that DeviceID.' },
  DeviceUnavailable: { status: 200, description: 'The speaker exists but is not reachable now (Active false).' },
  MediaNotFound: { status: 200, description: 'No media item has that PersistentID.' },
  NoSpeakerSelected: { status: 200, description: 'A session-target play was asked for but no speaker is in the playback session.' },
  NoSpeakerAvailable: { status: 200, description: 'None of the target speakers is available.' },
  PriorityTooLow: { status: 200, description: 'A playback with a higher Priority is playing.' },
  NotPlaying: { status: 200, description: 'pause_play was asked for but nothing is playing.' },
  NotResumable: { status: 200, description: 'Nothing paused to resume, the paused playback is not hub media, or it is another PersistentID.' },
  PlaybackFailed: { status: 200, description: 'No target speaker could start the media (unreachable URL, speaker error).' },
  SpeakerError: { status: 200, description: 'A speaker did not carry out the command (it answered with an error or timed out).' },
  TtsFailed: { status: 200, description: 'The text-to-speech provider could not synthesize the text (not configured, refused, unreachable).' },
  TtsBusy: { status: 200, description: 'Too many texts are waiting for synthesis (limits.ttsQueue); retry in a moment.' },
  Busy: { status: 503, description: 'The hub is at one of its limits (event streams); retry later. The message names the limit.' },
  HubOffline: { status: 503, description: 'Cloud mode: none of your hubs is connected to the cloud now (or its link dropped mid-request).' },
  HubBusy: { status: 503, description: 'Cloud mode: your hub has too many requests in flight; retry shortly.' },
  HubTimeout: { status: 504, description: 'Cloud mode: your hub did not answer in time.' },
  AnnouncementNotFound: {
    status: 200,
    description: 'No announcement has that AnnouncementID (unknown, or older than the last 1,000 finished ones). Beyond the spec.',
  },
  AnnouncementQueueFull: {
    status: 200,
    description: 'Too many announcements wait for a target speaker (16) or in all (256); try again later. Beyond the spec.',
  },
  InternalError: { status: 500, description: 'An unexpected fault; it is logged with details.' },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export class HubError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Name of the offending parameter, for InvalidParameter and friends. */
  readonly parameter?: string;

  constructor(code: ErrorCode, message: string, options?: { parameter?: string; cause?: unknown }) {
    super(message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.name = 'HubError';
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.parameter = options?.parameter;
  }
}

export function isHubError(e: unknown): e is HubError {
  return e instanceof HubError;
}

/** The wire shape of a failure, shared by every front end. */
export interface ErrorBody {
  Result: 'false';
  ErrorCode: ErrorCode;
  ErrorMessage: string;
  Parameter?: string;
}

export function errorBody(e: HubError): ErrorBody {
  // Messages quote what clients and speakers said (URLs, fault texts): never a secret in clear.
  const body: ErrorBody = { Result: 'false', ErrorCode: e.code, ErrorMessage: redactText(e.message) };
  if (e.parameter) body.Parameter = e.parameter;
  return body;
}
