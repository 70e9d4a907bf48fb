/** Hub volume 0–50 ↔ HomeKit percent 0–100: percent = 2 × volume; volume = round(percent / 2). */
export function volumeToPercent(volume: number): number {
  return Math.max(0, Math.min(100, Math.round(volume) * 2));
}

export function percentToVolume(percent: number): number {
  return Math.max(0, Math.min(50, Math.round(Number(percent) / 2)));
}
