/**
 * The hub's volume (0–50) against a renderer's RenderingControl range (from its SCPD; 0–100
 * on most). With at least 50 steps every hub value survives the round trip (set 17, read 17);
 * a coarser renderer reads back the nearest value it has, which the speaker papers over by
 * remembering what it last set.
 */
export class VolumeScale {
  constructor(private readonly range: { min: number; max: number } = { min: 0, max: 100 }) {}

  toRenderer(hub: number): number {
    const v = Math.max(0, Math.min(50, Math.round(hub)));
    const { min, max } = this.range;
    return Math.round(min + (v / 50) * (max - min));
  }

  toHub(raw: number): number {
    const { min, max } = this.range;
    return Math.max(0, Math.min(50, Math.round(((raw - min) / (max - min)) * 50)));
  }
}
