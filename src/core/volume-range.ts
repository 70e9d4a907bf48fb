/**
 * The hub's volume scale, 0–50 (the spec's `Volume`): every driver maps its protocol's range
 * onto it, and every front end maps its own (HomeKit and DLNA 0–100) onto it.
 */
export const VOLUME_MIN = 0;
export const VOLUME_MAX = 50;

/** Rounds and clamps any number onto the hub's scale. */
export function clampVolume(v: number): number {
  if (!Number.isFinite(v)) return VOLUME_MIN;
  return Math.min(VOLUME_MAX, Math.max(VOLUME_MIN, Math.round(v)));
}
