import { HubError } from './errors';
import type { SpeakerRegistry } from './speaker-registry';
import type { Logger } from '../logger';

/** Volume 0 (muted) to 50, per speaker and for all speakers. */
export class VolumeControl {
  constructor(
    private readonly registry: SpeakerRegistry,
    private readonly logger: Logger,
  ) {}

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
