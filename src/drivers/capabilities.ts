import type { Speaker, SpeakerCapabilities, SpeakerDriver } from './driver';

/**
 * The one gate to a speaker's optional parts (as Music Assistant's player feature set): the
 * core reaches mute, snapshot/restore and driver overlays only through these functions, which
 * answer by the capabilities the speaker declares. A method a driver has but does not declare
 * is never called; a capability declared without its methods is a driver bug that
 * capabilityProblems() names (the registry logs it when the speaker is added) and the gate
 * treats as absent — so the flags and the methods cannot drift into two truths.
 */

/** The optional parts each capability stands for: methods on the speaker, or on its driver. */
type SpeakerPart = 'isMuted' | 'setMute' | 'snapshot' | 'restore';
type DriverPart = 'overlay';
const NEEDS: Record<'mute' | 'snapshot' | 'duck', { speaker: SpeakerPart[]; driver: DriverPart[] }> = {
  mute: { speaker: ['isMuted', 'setMute'], driver: [] },
  snapshot: { speaker: ['snapshot', 'restore'], driver: [] },
  duck: { speaker: [], driver: ['overlay'] },
};

type Checked = keyof typeof NEEDS;

function declared(s: Speaker, c: Checked): boolean {
  return !!(s.capabilities as SpeakerCapabilities | undefined)?.[c];
}

function present(s: Speaker, driver: SpeakerDriver | undefined, c: Checked): boolean {
  const need = NEEDS[c];
  return need.speaker.every((m) => typeof s[m] === 'function') && need.driver.every((m) => !!driver && typeof driver[m] === 'function');
}

/**
 * What a speaker declares that it (or its driver) lacks, and what it has but does not
 * declare, in words for a driver's author; empty when the two agree.
 */
export function capabilityProblems(s: Speaker, driver?: SpeakerDriver): string[] {
  const problems: string[] = [];
  for (const c of Object.keys(NEEDS) as Checked[]) {
    const need = NEEDS[c];
    const parts = [...need.speaker.map((m) => `speaker.${m}()`), ...need.driver.map((m) => `driver.${m}()`)].join(', ');
    const has = present(s, driver, c);
    if (declared(s, c) && !has) problems.push(`declares capabilities.${c} but lacks ${parts}; the hub treats it as absent`);
    // Checked on the speaker's own methods only: a driver may serve speakers of both kinds.
    if (!declared(s, c) && need.speaker.length && need.speaker.every((m) => typeof s[m] === 'function'))
      problems.push(`has ${parts} but does not declare capabilities.${c}; the hub never calls them`);
  }
  return problems;
}

/** The speaker's own mute, when it declares one. */
export function muteOf(s: Speaker): { isMuted(): boolean; setMute(muted: boolean): Promise<void> } | undefined {
  if (!declared(s, 'mute') || !present(s, undefined, 'mute')) return undefined;
  return { isMuted: () => s.isMuted!(), setMute: (m) => s.setMute!(m) };
}

/** The speaker's muted state, false when it has no mute of its own. */
export function isMuted(s: Speaker): boolean {
  return muteOf(s)?.isMuted() ?? false;
}

/** Reading and putting back what the speaker plays, when it declares it. */
export function snapshotsOf(s: Speaker): Pick<Required<Speaker>, 'snapshot' | 'restore'> | undefined {
  if (!declared(s, 'snapshot') || !present(s, undefined, 'snapshot')) return undefined;
  return { snapshot: () => s.snapshot!(), restore: (snap, o) => s.restore!(snap, o) };
}

/** Whether the driver plays overlays over this speaker's music itself (its overlay()). */
export function mixesOverlays(s: Speaker, driver: SpeakerDriver | undefined): boolean {
  return declared(s, 'duck') && present(s, driver, 'duck');
}
