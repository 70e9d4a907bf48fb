/**
 * Why an announcement ended the way it did, as typed codes. The scheduling decides on the
 * code (done or failed, see `endsDone`); the text clients read in announcement_status's
 * Reason and in the events is made from it here, in one place.
 */
export type AnnouncementReason =
  /** stop_play ended it (queued ones fail with it; started ones are done). */
  | { code: 'stopped_by_play' }
  /** The hub shut down while it was queued or playing. */
  | { code: 'hub_shutdown' }
  /** A higher-Priority announcement cut in on some of its speakers. */
  | { code: 'interrupted'; by: string; deviceIds: string[] }
  /** Its media could not be prepared (TTS failure): no speaker was touched, or only its chime played (the speech was synthesized while it played). */
  | { code: 'load_failed'; message: string; errorCode?: string }
  /** Every speaker it started on refused to play it. */
  | { code: 'play_failed'; failures: string[] }
  /** Over without playing anywhere, and nothing more specific is known (e.g. every target vanished first). */
  | { code: 'never_played' };

export type AnnouncementReasonCode = AnnouncementReason['code'];

/** Every code at run time (announcement_status's ReasonCode schema); fails to compile when a code is missing here. */
export const ANNOUNCEMENT_REASON_CODES = [
  'stopped_by_play',
  'hub_shutdown',
  'interrupted',
  'load_failed',
  'play_failed',
  'never_played',
] as const satisfies readonly AnnouncementReasonCode[];
type Unlisted = Exclude<AnnouncementReasonCode, (typeof ANNOUNCEMENT_REASON_CODES)[number]>;
const everyCodeListed: [Unlisted] extends [never] ? true : Unlisted = true;
void everyCodeListed;

/** The wire text of a reason (announcement_status's Reason, the events' reason). */
export function reasonText(reason: AnnouncementReason): string {
  switch (reason.code) {
    case 'stopped_by_play':
      return 'stopped by stop_play';
    case 'hub_shutdown':
      return 'hub shutdown';
    case 'interrupted':
      return `Interrupted by announcement ${reason.by} (higher Priority) on ${reason.deviceIds.join(', ')}.`;
    case 'load_failed':
      return reason.message;
    case 'play_failed':
      return `No speaker could play the announcement: ${reason.failures.join('; ')}`;
    case 'never_played':
      return 'No target speaker could play the announcement.';
  }
}

/**
 * Whether an announcement that is over on every speaker, and restored, is done (else
 * failed): it played somewhere, or stop_play ended it before it could (the user's stop is
 * not a failure). Shutdown before it played, or no speaker playing it, is a failure.
 */
export function endsDone(played: boolean, reason: AnnouncementReason | undefined): boolean {
  // A chime that played before its speech failed is not an announcement heard.
  if (reason?.code === 'load_failed') return false;
  return played || reason?.code === 'stopped_by_play';
}
