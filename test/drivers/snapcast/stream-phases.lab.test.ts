import {
  checkPhaseChange,
  phaseOf,
  STREAM_TRANSITIONS,
  StreamPhaseError,
  type PhaseFacts,
  type StreamPhase,
} from '../../../src/drivers/snapcast/stream-phases';

const idle: PhaseFacts = { members: 0, pending: false, feedRunning: false, overlay: false, ending: false, held: false, ducking: false };

describe('snapcast stream phases', () => {
  test('the facts of a stream name one phase, the most specific mode first', () => {
    expect(phaseOf(idle)).toBe('free');
    expect(phaseOf({ ...idle, pending: true })).toBe('starting');
    expect(phaseOf({ ...idle, members: 2, feedRunning: true })).toBe('playing');
    expect(phaseOf({ ...idle, members: 2 })).toBe('paused');
    expect(phaseOf({ ...idle, members: 2, feedRunning: true, ducking: true })).toBe('ducking');
    expect(phaseOf({ ...idle, members: 1, feedRunning: true, overlay: true })).toBe('announcing');
    // Music held behind an announcement outranks the announcement itself.
    expect(phaseOf({ ...idle, members: 1, feedRunning: true, overlay: true, held: true })).toBe('holding');
    expect(phaseOf({ ...idle, members: 2, feedRunning: false, ending: true })).toBe('ending');
    // A new start while the old feed drains: starting.
    expect(phaseOf({ ...idle, members: 2, ending: true, pending: true })).toBe('starting');
  });

  test('the table allows the changes a stream goes through, and names the others as bugs', () => {
    const legal: [StreamPhase, StreamPhase][] = [
      ['free', 'starting'],
      ['starting', 'playing'],
      ['playing', 'paused'],
      ['paused', 'playing'],
      ['playing', 'ducking'],
      ['ducking', 'playing'],
      ['playing', 'ending'],
      ['ending', 'free'],
      ['playing', 'holding'],
      ['holding', 'playing'],
      ['announcing', 'free'],
    ];
    for (const [from, to] of legal) expect(() => checkPhaseChange('SpeakerHub', from, to)).not.toThrow();
    for (const [from, to] of [
      ['free', 'ducking'],
      ['free', 'ending'],
      ['paused', 'ending'],
      ['holding', 'ducking'],
    ] as [StreamPhase, StreamPhase][]) {
      expect(() => checkPhaseChange('SpeakerHub2', from, to)).toThrow(StreamPhaseError);
    }
    let caught: unknown;
    try {
      checkPhaseChange('SpeakerHub2', 'free', 'ducking');
    } catch (e) {
      caught = e;
    }
    expect(caught).toMatchObject({ code: 'StreamPhaseError', stream: 'SpeakerHub2', from: 'free', to: 'ducking' });
    // Every phase can end (stop, failure, lost connection) back in free, but free itself.
    for (const p of Object.keys(STREAM_TRANSITIONS) as StreamPhase[]) if (p !== 'free') expect(STREAM_TRANSITIONS[p]).toContain('free');
  });
});
