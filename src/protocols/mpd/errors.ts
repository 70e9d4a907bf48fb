/**
 * Why an MPD peer failed, with a stable code. Everything a peer can do wrong ends in one of
 * these (never in an exception from a socket handler), so the driver can mark the speaker
 * unavailable with the reason and try again later.
 */
export type MpdErrorCode =
  /** No connection, greeting or answer within the time allowed. */
  | 'MpdTimeout'
  /** The peer does not speak MPD (no `OK MPD x.y.z` greeting). */
  | 'MpdGarbage'
  /** The connection could not be made. */
  | 'MpdRefused'
  /** The connection closed (peer or hub). */
  | 'MpdClosed'
  /** A line, an answer or a binary chunk over its bound. */
  | 'MpdTooLarge'
  /** Malformed or unexpected protocol input (an `OK` nobody waits for, a bad `binary:` length …). */
  | 'MpdProtocol'
  /** Too many commands already wait for this connection. */
  | 'MpdBusy'
  /** The server answered the command with `ACK` (a normal refusal; the connection stays). */
  | 'MpdAck';

export class MpdConnectionError extends Error {
  constructor(
    readonly code: MpdErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'MpdConnectionError';
  }
}

/** `ACK [error@command_listNum] {current_command} message_text` */
export class MpdAckError extends MpdConnectionError {
  constructor(
    /** The whole ACK line, as MPD sent it (bounded by the line limit). */
    readonly line: string,
    /** MPD's numeric error (50: no such song …), when the line has one. */
    readonly ack?: number,
  ) {
    super('MpdAck', line);
    this.name = 'MpdAckError';
  }
}

/** Parses an ACK line; undefined when it is not one. */
export function parseAck(line: string): MpdAckError | undefined {
  if (!line.startsWith('ACK ')) return undefined;
  const m = /^ACK \[(\d{1,5})@\d{1,9}\]/.exec(line);
  return new MpdAckError(line, m ? Number(m[1]) : undefined);
}
