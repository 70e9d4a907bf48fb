/**
 * The driver conformance suite: one set of cases every SpeakerDriver must pass, driven
 * directly (not through the hub), so that the core can rely on the contract in
 * src/drivers/driver.ts whatever the protocol. Each family instantiates it once
 * (test/drivers/conformance/<family>.test.ts) with a setup that starts its real peers; the
 * virtual driver runs it in the fast tier.
 *
 * A case a driver does not meet yet is listed in the instance's `gaps` with why: it is then
 * skipped with that reason in its title, never silently passed.
 */
import { capabilityProblems } from '../../../src/drivers/capabilities';
import type { MediaRequest, Speaker, SpeakerDriver, SpeakerEvents, SpeakerSnapshot, StopReason } from '../../../src/drivers/driver';
import type { ConformanceMedia } from './media';
import { eventually } from '../../helpers/wait';

export type ConformanceCase =
  'capabilities' | 'play' | 'stop' | 'ended' | 'volume' | 'mute' | 'seek' | 'snapshot' | 'vanish' | 'playGroup' | 'overlay';

export interface ConformanceLab {
  /** Started; its speakers already announced and available. */
  driver: SpeakerDriver;
  /** The speakers under test (playGroup needs two). */
  speakers: Speaker[];
  media: ConformanceMedia;
  /** The speaker drops off the network (its peer killed, or the virtual speaker's vanish()). */
  vanish(s: Speaker): Promise<void>;
  /** It comes back (the peer restarted); the suite then waits for availability true. */
  reappear(s: Speaker): Promise<void>;
  /**
   * What the speaker really plays, when the family can capture it: mark() now, then whether a
   * tone was heard since the mark. Absent: the suite judges by state and position only.
   */
  audio?(s: Speaker): { mark(): number; heardSince(mark: number): boolean };
  /** Slack for waits on this family (a peer buffers, a connection is re-established); default 1. */
  slowness?: number;
  close(): Promise<void>;
}

export interface ConformanceOptions {
  /** The family's labSuite() describe; plain describe for in-process drivers. */
  describe?: jest.Describe;
  /**
   * Cases this driver does not meet yet, with why: skipped, with the reason in the test's
   * title, so a gap shows in every run instead of passing quietly.
   */
  gaps?: Partial<Record<ConformanceCase, string>>;
}

type Recorded = { [K in keyof SpeakerEvents]: [K, ...SpeakerEvents[K]] }[keyof SpeakerEvents];

/** Every event a speaker emits from now on, and a wait for one that matches. */
function record(s: Speaker): {
  events: Recorded[];
  until(what: string, match: (e: Recorded) => boolean, ms: number): Promise<Recorded>;
  done(): void;
} {
  const events: Recorded[] = [];
  const names = ['state', 'availability', 'volume', 'info', 'ownPlayState'] as const;
  const handlers = names.map((n) => {
    const h = (...args: unknown[]) => events.push([n, ...args] as unknown as Recorded);
    s.on(n, h as never);
    return [n, h] as const;
  });
  return {
    events,
    async until(what, match, ms) {
      await eventually(
        () => events.some(match),
        ms,
        () => `${what} (events: ${JSON.stringify(events)})`,
      );
      return events.find(match)!;
    },
    done: () => handlers.forEach(([n, h]) => s.off(n, h as never)),
  };
}

const isState =
  (state: string, reason?: StopReason) =>
  (e: Recorded): boolean =>
    e[0] === 'state' && e[1] === state && (reason === undefined || e[2] === reason);

/**
 * Defines the suite for one driver. `describeFn` is the family's labSuite() describe (which
 * fails, or skips with SPEAKERHUB_SKIP_LABS=1, when the peer cannot run here).
 */
export function driverConformance(name: string, setup: () => Promise<ConformanceLab>, options: ConformanceOptions = {}): void {
  const describeFn = options.describe ?? describe;
  describeFn(`driver conformance: ${name}`, () => {
    let lab: ConformanceLab;
    const slow = (ms: number) => ms * (lab?.slowness ?? 1);
    const first = () => lab.speakers[0];
    const caps = (s: Speaker) => s.capabilities ?? { mute: false, snapshot: false, seek: false, syncGroup: false };

    beforeAll(async () => {
      lab = await setup();
    });
    afterAll(async () => {
      await lab?.close();
    });
    // Each case starts from stopped, available speakers: a failed case does not spill over.
    afterEach(async () => {
      if (!lab) return;
      for (const s of lab.speakers) {
        if (!s.available) {
          await lab.reappear(s).catch(() => undefined);
          await eventually(() => s.available, slow(15_000), `${s.id} to come back`).catch(() => undefined);
        }
        if (s.state !== 'stopped') await s.stop().catch(() => undefined);
      }
    });

    /**
     * A case; one the instance lists as a known gap still runs, as an expected failure
     * (test.failing): it proves the gap is there, and fails once the driver meets the case.
     */
    function conformance(id: ConformanceCase, title: string, fn: () => Promise<void>, timeoutMs = 30_000): void {
      const gap = options.gaps?.[id];
      if (gap) test.failing(`${title} — KNOWN GAP: ${gap}`, fn, timeoutMs);
      else test(title, fn, timeoutMs);
    }

    /** Plays and checks the contract: resolves, state event 'playing', state 'playing'. */
    async function playAndExpectPlaying(s: Speaker, media: MediaRequest): Promise<void> {
      const rec = record(s);
      // A repeated 'playing' is no event (BaseSpeaker.setPlayState): one playing already may go straight on.
      const was = s.state;
      try {
        await s.play(media);
        expect(s.state).toBe('playing');
        if (was !== 'playing') await rec.until(`${s.id}: a 'playing' state event`, isState('playing'), slow(2000));
      } finally {
        rec.done();
      }
    }

    /** Waits until position() has moved on by `by` seconds from now (when the speaker reports one). */
    async function positionAdvances(s: Speaker, by = 0.5): Promise<void> {
      const p0 = s.position();
      if (p0 === undefined) return;
      await eventually(
        () => (s.position() ?? -1) >= p0 + by,
        slow(5000),
        () => `${s.id}: position to pass ${p0 + by} (at ${s.position()})`,
      );
    }

    /** A level the captured tone is found at (an earlier case may have left the speaker quiet). */
    async function audibleLevel(s: Speaker): Promise<void> {
      if (lab.audio) await s.setVolume(40);
    }

    async function heard(s: Speaker, mark: number | undefined): Promise<void> {
      const a = lab.audio?.(s);
      if (!a || mark === undefined) return;
      await eventually(() => a.heardSince(mark), slow(10_000), `${s.id}: the tone in its captured output`);
    }

    conformance('capabilities', 'capabilities agree with the methods (capabilityProblems is empty)', async () => {
      for (const s of lab.speakers) {
        expect({ id: s.id, problems: capabilityProblems(s, lab.driver) }).toEqual({ id: s.id, problems: [] });
        expect(lab.driver.speakers()).toContain(s);
        // playGroup is how a driver says its speakers start in sync.
        if (caps(s).syncGroup) expect(typeof lab.driver.playGroup).toBe('function');
      }
    });

    conformance('play', "play() resolves with state 'playing' (event seen), position advances, the tone is heard", async () => {
      const s = first();
      await audibleLevel(s);
      const mark = lab.audio?.(s).mark();
      await playAndExpectPlaying(s, { url: lab.media.url(20, 440, 'play'), contentType: 'audio/wav', title: 'Conformance play', duration: 20 });
      await positionAdvances(s);
      await heard(s, mark);
      expect(s.state).toBe('playing');
    });

    conformance('stop', "stop() gives state 'stopped' with reason 'stopped'", async () => {
      const s = first();
      await playAndExpectPlaying(s, { url: lab.media.url(20, 440, 'stop'), contentType: 'audio/wav', duration: 20 });
      const rec = record(s);
      try {
        await s.stop();
        await rec.until(`${s.id}: stopped (stopped)`, isState('stopped', 'stopped'), slow(3000));
        expect(s.state).toBe('stopped');
        expect(rec.events.filter(isState('stopped'))).toHaveLength(1);
      } finally {
        rec.done();
      }
    });

    conformance('ended', "a short media plays to its end: state 'stopped' with reason 'ended'", async () => {
      const s = first();
      const rec = record(s);
      try {
        await s.play({ url: lab.media.url(2, 550, 'ended'), contentType: 'audio/wav', duration: 2 });
        await rec.until(`${s.id}: stopped (ended)`, isState('stopped', 'ended'), slow(10_000));
        expect(s.state).toBe('stopped');
        expect(rec.events.filter(isState('stopped')).map((e) => e[2])).toEqual(['ended']);
      } finally {
        rec.done();
      }
    });

    conformance('volume', 'setVolume() reports the new level in a volume event and in volume', async () => {
      const s = first();
      for (const target of [s.volume === 17 ? 23 : 17, 31]) {
        const rec = record(s);
        try {
          await s.setVolume(target);
          await rec.until(`${s.id}: volume ${target}`, (e) => e[0] === 'volume' && e[1] === target, slow(3000));
          expect(s.volume).toBe(target);
        } finally {
          rec.done();
        }
      }
    });

    conformance('mute', 'setMute() when capabilities.mute: isMuted follows, the level is kept and back on unmute', async () => {
      const s = first();
      if (!caps(s).mute) return;
      await s.setVolume(s.volume === 21 ? 22 : 21);
      const volume = s.volume;
      await s.setMute!(true);
      await eventually(() => s.isMuted!() === true, slow(3000), `${s.id}: muted`);
      // A muted speaker keeps its level; some report volume 0 while muted (UPnP, Snapcast: the
      // hub's Volume of a muted speaker), none may report another level.
      expect([volume, 0]).toContain(s.volume);
      await s.setMute!(false);
      await eventually(
        () => s.isMuted!() === false && s.volume === volume,
        slow(3000),
        () => `${s.id}: unmuted at ${volume} (${s.volume})`,
      );
    });

    conformance('seek', 'play() honours startAt when capabilities.seek', async () => {
      const s = first();
      if (!caps(s).seek) return;
      await playAndExpectPlaying(s, { url: lab.media.url(20, 660, 'seek'), contentType: 'audio/wav', duration: 20, startAt: 8 });
      await eventually(
        () => (s.position() ?? 0) >= 7.5,
        slow(5000),
        () => `${s.id}: position near 8 s (at ${s.position()})`,
      );
      expect(s.position()!).toBeLessThan(8 + slow(5));
    });

    conformance('snapshot', 'snapshot()/restore() round trip when capabilities.snapshot: state, media, position, volume', async () => {
      const s = first();
      if (!caps(s).snapshot) return;
      const url = lab.media.url(30, 440, 'snapshot');
      await s.setVolume(13);
      await playAndExpectPlaying(s, { url, contentType: 'audio/wav', title: 'Conformance snapshot', duration: 30 });
      await eventually(
        () => (s.position() ?? 0) >= 2,
        slow(6000),
        () => `${s.id}: 2 s into the media (at ${s.position()})`,
      );
      const snap: SpeakerSnapshot = await s.snapshot!();
      expect(snap).toMatchObject({ state: 'playing', volume: 13 });
      // Read from the speaker itself, which may lag the driver's own estimate (MPD's elapsed behind its paced output).
      expect(snap.position).toBeGreaterThanOrEqual(1);

      // Something else takes over, at another level.
      await playAndExpectPlaying(s, { url: lab.media.url(20, 880, 'intruder'), contentType: 'audio/wav', duration: 20 });
      await s.setVolume(30);
      const rec = record(s);
      try {
        await s.restore!(snap);
        await eventually(
          () => s.state === 'playing' && s.volume === 13,
          slow(5000),
          () => `${s.id}: playing at 13 (${s.state}, ${s.volume})`,
        );
        // A renderer reports the seek's position a moment after it plays again (gmediarender reads 0 first).
        let again = await s.snapshot!();
        const back = Date.now() + slow(5000);
        while ((again.position ?? 0) < snap.position! - 1.5 && Date.now() < back) {
          await new Promise((r) => setTimeout(r, 100));
          again = await s.snapshot!();
        }
        expect(again).toMatchObject({ state: 'playing', volume: 13 });
        expect(again.url).toBe(snap.url);
        // Restored where it was (a playing snapshot may be resumed as far on as it was taken ago).
        const since = (Date.now() - snap.takenAt) / 1000;
        expect(again.position).toBeGreaterThanOrEqual(snap.position! - 1.5);
        expect(again.position).toBeLessThanOrEqual(snap.position! + since + slow(2));
      } finally {
        rec.done();
      }
    });

    conformance(
      'vanish',
      "a speaker that vanishes: availability false and a playing one reports stopped 'error'; back: available, plays again",
      async () => {
        const s = first();
        await playAndExpectPlaying(s, { url: lab.media.url(30, 440, 'vanish'), contentType: 'audio/wav', duration: 30 });
        const rec = record(s);
        try {
          await lab.vanish(s);
          await rec.until(`${s.id}: availability false`, (e) => e[0] === 'availability' && e[1] === false, slow(15_000));
          await rec.until(`${s.id}: stopped (error)`, isState('stopped', 'error'), slow(2000));
          expect(s.available).toBe(false);
          expect(s.state).toBe('stopped');
          await lab.reappear(s);
          await rec.until(`${s.id}: availability true`, (e) => e[0] === 'availability' && e[1] === true, slow(20_000));
        } finally {
          rec.done();
        }
        await audibleLevel(s);
        const mark = lab.audio?.(s).mark();
        await playAndExpectPlaying(s, { url: lab.media.url(20, 440, 'back'), contentType: 'audio/wav', duration: 20 });
        await positionAdvances(s);
        await heard(s, mark);
      },
      90_000,
    );

    conformance('playGroup', 'playGroup() when capabilities.syncGroup: every speaker plays, results in order', async () => {
      const group = lab.speakers.filter((s) => caps(s).syncGroup);
      if (group.length < 2 || !lab.driver.playGroup) return;
      const recs = group.map(record);
      try {
        const results = await lab.driver.playGroup(group, {
          url: lab.media.url(20, 440, 'group'),
          contentType: 'audio/wav',
          duration: 20,
          zone: 'conformance',
        });
        expect(results.map((r) => r.status)).toEqual(group.map(() => 'fulfilled'));
        await Promise.all(recs.map((r, i) => r.until(`${group[i].id}: playing`, isState('playing'), slow(3000))));
        for (const s of group) expect(s.state).toBe('playing');
        await Promise.all(group.map((s) => positionAdvances(s)));
      } finally {
        recs.forEach((r) => r.done());
      }
    });

    conformance('overlay', "overlay() when capabilities.duck: its handle's ended settles 'ended', the music plays on throughout", async () => {
      const s = first();
      if (!caps(s).duck) return;
      expect(typeof lab.driver.overlay).toBe('function');
      await playAndExpectPlaying(s, { url: lab.media.url(30, 330, 'music'), contentType: 'audio/wav', duration: 30, zone: 'conformance' });
      const rec = record(s);
      try {
        const [result] = await lab.driver.overlay!([s], {
          url: lab.media.url(2, 880, 'voice'),
          contentType: 'audio/wav',
          duration: 2,
          duck: { levelDb: -20, fadeMs: 100 },
        });
        if (result.status === 'rejected') throw result.reason;
        const end = await Promise.race([
          result.value.ended,
          new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the overlay did not end')), slow(15_000))),
        ]);
        expect(end.reason).toBe('ended');
        expect(s.state).toBe('playing');
        expect(rec.events.filter((e) => e[0] === 'state')).toEqual([]);
        await positionAdvances(s);
        expect(s.state).toBe('playing');
      } finally {
        rec.done();
      }
    });
  });
}
