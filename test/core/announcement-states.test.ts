/**
 * The announcement lifecycle's tables: every listed transition moves, everything else is an
 * AnnouncementStateError (a scheduling bug shows as a typed error, not an odd state); the
 * wire vocabulary and the reasons' text and outcome come from one place each.
 */
import {
  ANNOUNCEMENT_STATE_OF,
  ANNOUNCEMENT_TRANSITIONS,
  AnnouncementStateError,
  LANE_TRANSITIONS,
  transition,
  type AnnouncementPhase,
  type AnnouncementTrigger,
  type LanePhase,
  type LaneTrigger,
} from '../../src/core/announcement-states';
import { ANNOUNCEMENT_REASON_CODES, endsDone, reasonText, type AnnouncementReason } from '../../src/core/announcement-reasons';
import { AnnouncementReasonCodeSchema, AnnouncementStateSchema } from '../../src/operations/schemas';

const PHASES: AnnouncementPhase[] = ['loading', 'queued', 'starting', 'playing', 'waiting_restore', 'done', 'failed'];
const TRIGGERS: AnnouncementTrigger[] = ['loaded', 'cancel', 'start', 'speak', 'end', 'restored', 'unplayed'];
const LANE_PHASES: LanePhase[] = ['free', 'announcing', 'between', 'restoring'];
const LANE_TRIGGERS: LaneTrigger[] = ['take', 'handover', 'release', 'restored'];

describe('announcement transitions', () => {
  test('the table is exactly the lifecycle: each listed transition moves, every other one throws a typed error', () => {
    const allowed: string[] = [];
    for (const from of PHASES) {
      for (const trigger of TRIGGERS) {
        const subject = { id: 'a1', phase: from };
        try {
          const to = transition('announcement', ANNOUNCEMENT_TRANSITIONS, subject, trigger);
          expect(subject.phase).toBe(to);
          allowed.push(`${from} -${trigger}-> ${to}`);
        } catch (e) {
          expect(e).toBeInstanceOf(AnnouncementStateError);
          expect(e).toMatchObject({ code: 'AnnouncementStateError', machine: 'announcement', subject: 'a1', from, trigger });
          // An illegal transition changes nothing.
          expect(subject.phase).toBe(from);
        }
      }
    }
    expect(allowed).toEqual([
      'loading -loaded-> queued',
      'loading -cancel-> failed',
      'queued -cancel-> failed',
      'queued -start-> starting',
      'starting -speak-> playing',
      'starting -end-> waiting_restore',
      'playing -end-> waiting_restore',
      'waiting_restore -restored-> done',
      'waiting_restore -unplayed-> failed',
    ]);
  });

  test('done and failed are final; an announcement that played cannot be cancelled or started again', () => {
    for (const from of ['done', 'failed'] as const) expect(Object.keys(ANNOUNCEMENT_TRANSITIONS[from])).toEqual([]);
    expect(() => transition('announcement', ANNOUNCEMENT_TRANSITIONS, { id: 'x', phase: 'playing' as AnnouncementPhase }, 'cancel')).toThrow(
      "Illegal announcement transition for x: 'cancel' in state 'playing'.",
    );
    expect(() => transition('announcement', ANNOUNCEMENT_TRANSITIONS, { id: 'x', phase: 'waiting_restore' as AnnouncementPhase }, 'start')).toThrow(
      AnnouncementStateError,
    );
  });

  test('lanes: take, hand over, release, restored; a restoring lane takes nothing', () => {
    const allowed: string[] = [];
    for (const from of LANE_PHASES) {
      for (const trigger of LANE_TRIGGERS) {
        const lane = { id: 'speaker-1', phase: from };
        try {
          allowed.push(`${from} -${trigger}-> ${transition('lane', LANE_TRANSITIONS, lane, trigger)}`);
        } catch (e) {
          expect(e).toMatchObject({ code: 'AnnouncementStateError', machine: 'lane', from, trigger });
        }
      }
    }
    expect(allowed).toEqual([
      'free -take-> announcing',
      'announcing -take-> announcing',
      'announcing -handover-> between',
      'announcing -release-> restoring',
      'between -take-> announcing',
      'between -release-> restoring',
      'restoring -restored-> free',
    ]);
  });

  test('every internal state maps to a State the operation schema accepts, waiting_restore included', () => {
    for (const phase of PHASES) expect(AnnouncementStateSchema.safeParse(ANNOUNCEMENT_STATE_OF[phase]).success).toBe(true);
    expect(PHASES.map((p) => ANNOUNCEMENT_STATE_OF[p])).toEqual(['queued', 'queued', 'playing', 'playing', 'waiting_restore', 'done', 'failed']);
  });
});

describe('announcement reasons', () => {
  test('done or failed is decided by the code: played, or stopped by stop_play, is done; a chime whose speech failed is not', () => {
    const reasons: AnnouncementReason[] = [
      { code: 'stopped_by_play' },
      { code: 'hub_shutdown' },
      { code: 'interrupted', by: 'B', deviceIds: ['s1'] },
      { code: 'load_failed', message: 'Text-to-speech failed' },
      { code: 'play_failed', failures: ['s1: refused'] },
      { code: 'never_played' },
    ];
    expect(reasons.map((r) => endsDone(false, r))).toEqual([true, false, false, false, false, false]);
    // load_failed after something played: the chime played while its speech was synthesized, and the synthesis failed.
    expect(reasons.map((r) => endsDone(true, r))).toEqual([true, true, true, false, true, true]);
    expect(endsDone(true, undefined)).toBe(true);
    expect(endsDone(false, undefined)).toBe(false);
    // A message that merely mentions stop_play decides nothing.
    expect(endsDone(false, { code: 'load_failed', message: 'failed during stop_play' })).toBe(false);
  });

  test('announcement_status carries every code as ReasonCode', () => {
    expect(AnnouncementReasonCodeSchema.options).toEqual([...ANNOUNCEMENT_REASON_CODES]);
    expect(ANNOUNCEMENT_REASON_CODES).toHaveLength(6);
  });

  test('the wire text of each code', () => {
    expect(reasonText({ code: 'stopped_by_play' })).toBe('stopped by stop_play');
    expect(reasonText({ code: 'hub_shutdown' })).toBe('hub shutdown');
    expect(reasonText({ code: 'interrupted', by: 'B', deviceIds: ['s1', 's2'] })).toBe('Interrupted by announcement B (higher Priority) on s1, s2.');
    expect(reasonText({ code: 'load_failed', message: 'Text-to-speech failed: no voice' })).toBe('Text-to-speech failed: no voice');
    expect(reasonText({ code: 'play_failed', failures: ['s1: a', 's2: b'] })).toBe('No speaker could play the announcement: s1: a; s2: b');
    expect(reasonText({ code: 'never_played' })).toBe('No target speaker could play the announcement.');
  });
});
