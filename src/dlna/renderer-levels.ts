import type { HubPort } from './hub-port';
import type { RendererIdentity } from './renderer';
import { desiredMute, desiredVolume, toHubVolume, toUpnpError, toUpnpVolume } from './renderer-values';
import { UpnpError } from '../protocols/upnp/soap';

/**
 * A renderer's RenderingControl: its volume and mute, read from the hub and set through it.
 * "All speakers" shows the mean of the active speakers and sets every one; an announcement
 * renderer keeps the level its announcements speak at (it changes no speaker's volume).
 */
export class RendererLevels {
  /** Announcement renderer: the level its announcements speak at (0–50), once a control point set one. */
  announceVolume?: number;

  constructor(
    private readonly id: RendererIdentity,
    private readonly hub: HubPort,
  ) {}

  /** 0–50 on the hub's scale. */
  volume(): number {
    if (this.id.kind === 'all') {
      const active = this.hub.speakers().filter((s) => s.active);
      return active.length ? Math.round(active.reduce((n, s) => n + s.volume, 0) / active.length) : 0;
    }
    if (this.id.kind === 'announce' && this.announceVolume !== undefined) return this.announceVolume;
    return this.hub.speaker(this.id.deviceId!)?.volume ?? 0;
  }

  muted(): boolean {
    if (this.id.kind !== 'speaker') return false;
    return this.hub.muted(this.id.deviceId!) ?? false;
  }

  /** RenderingControl's evented variables. */
  values(): Record<string, string> {
    return { Volume: String(toUpnpVolume(this.volume())), Mute: this.muted() ? '1' : '0' };
  }

  async setVolume(desired: string): Promise<Record<string, string>> {
    const v = toHubVolume(desiredVolume(desired));
    if (this.id.kind === 'announce') this.announceVolume = v;
    else if (this.id.kind === 'all') await command(() => this.hub.setVolumeAll(v));
    else await command(() => this.hub.setVolume(this.id.deviceId!, v));
    return {};
  }

  async setMute(desired: string): Promise<Record<string, string>> {
    const mute = desiredMute(desired);
    if (this.id.kind !== 'speaker') {
      if (mute) throw new UpnpError('ActionFailed', 'mute is per speaker: use the speaker’s own renderer');
      return {};
    }
    await command(() => this.hub.setMute(this.id.deviceId!, mute));
    return {};
  }
}

/** A hub command, its refusal as the UPnP error a control point understands. */
export async function command(fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (e) {
    throw toUpnpError(e);
  }
}
