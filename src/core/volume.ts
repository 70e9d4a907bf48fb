import { HubError } from './errors';
import type { SpeakerRegistry } from './speaker-registry';
import type { Logger } from '../logger';
import type { HubEventBus } from './events';
import { muteOf } from '../drivers/capabilities';

/** The level an emulated unmute restores when the speaker was at 0 before its mute. */
const UNMUTE_FALLBACK_VOLUME = 20;

/** Volume 0 (muted) to 50, per speaker and for all speakers. */
export class VolumeControl {
  /**
   * Speakers muted by volume 0 (no mute of their own), with the level to restore. Bounded by
   * the registry: an entry goes when its speaker is unmuted or its volume is set again.
   */
  private readonly emulatedMute = new Map<string, number>();

  constructor(
    private readonly registry: SpeakerRegistry,
    private readonly logger: Logger,
    private readonly events?: HubEventBus,
  ) {
    // A volume other than 0 set any way (a slider, the speaker's own knob) ends an emulated mute.
    events?.on('volume', (e) => {
      if (e.volume > 0) this.emulatedMute.delete(e.deviceId);
    });
  }

  /** Whether a speaker is muted: its own mute, or volume 0 set by setMute. */
  muted(deviceId: string): boolean {
    const speaker = this.registry.get(deviceId);
    const own = muteOf(speaker);
    if (own) return own.isMuted();
    return this.emulatedMute.has(deviceId) && speaker.volume === 0;
  }

  /**
   * Mutes or unmutes one speaker. With a mute of its own the speaker keeps its level; without
   * one, mute is volume 0 and unmute puts back the level it had (the rule every front end
   * used to code for itself).
   */
  async setMute(deviceId: string, muted: boolean): Promise<void> {
    const speaker = this.registry.get(deviceId);
    if (!speaker.available) throw new HubError('DeviceUnavailable', `Speaker ${deviceId} is not available.`, { parameter: 'DeviceID' });
    const was = this.muted(deviceId);
    const own = muteOf(speaker);
    try {
      if (own) await own.setMute(muted);
      else if (muted) {
        if (!this.emulatedMute.has(deviceId)) {
          const level = speaker.volume;
          await speaker.setVolume(0);
          this.emulatedMute.set(deviceId, level > 0 ? level : UNMUTE_FALLBACK_VOLUME);
        }
      } else {
        const level = this.emulatedMute.get(deviceId) ?? (speaker.volume === 0 ? UNMUTE_FALLBACK_VOLUME : undefined);
        this.emulatedMute.delete(deviceId);
        if (level !== undefined) await speaker.setVolume(level);
      }
    } catch (e) {
      throw new HubError('SpeakerError', `Speaker ${deviceId} did not take the mute: ${(e as Error).message}`, { cause: e });
    }
    if (was !== muted) this.events?.emit('mute', { deviceId, muted });
  }

  /**
   * The average over available speakers, rounded half up (24.5 → 25) so that setting every
   * speaker to v always reads back v. With no speaker available there is no average.
   */
  average(): number {
    const speakers = this.registry.available();
    if (!speakers.length) throw new HubError('NoSpeakerAvailable', 'No speaker is available to read a volume from.');
    const sum = speakers.reduce((acc, s) => acc + s.volume, 0);
    return Math.floor(sum / speakers.length + 0.5);
  }

  /** A speaker's volume; an unavailable speaker answers the last volume it reported. */
  of(deviceId: string): number {
    return this.registry.get(deviceId).volume;
  }

  async setAll(volume: number): Promise<void> {
    const speakers = this.registry.available();
    if (!speakers.length) throw new HubError('NoSpeakerAvailable', 'No speaker is available to set a volume on.');
    const results = await Promise.allSettled(speakers.map((s) => s.setVolume(volume)));
    const reasons = results.flatMap((r, i) =>
      // Named for people (the log and the error message), with the ID for scripts.
      r.status === 'rejected'
        ? [`${speakers[i].info().name} (${speakers[i].id}): ${r.reason instanceof Error ? r.reason.message : String(r.reason)}`]
        : [],
    );
    if (reasons.length) {
      this.logger.warn({ failed: reasons }, 'set_volume failed on some speakers');
      throw new HubError('SpeakerError', `Volume not set on ${reasons.length} of ${speakers.length} speakers: ${reasons.join('; ')}`);
    }
  }

  async set(deviceId: string, volume: number): Promise<void> {
    const speaker = this.registry.get(deviceId);
    if (!speaker.available) throw new HubError('DeviceUnavailable', `Speaker ${deviceId} is not available.`, { parameter: 'DeviceID' });
    try {
      await speaker.setVolume(volume);
    } catch (e) {
      throw new HubError('SpeakerError', `Speaker ${deviceId} did not take the volume: ${(e as Error).message}`, { cause: e });
    }
  }
}
