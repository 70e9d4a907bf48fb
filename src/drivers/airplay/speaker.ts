import type { Logger } from '../../logger';
import { BaseSpeaker } from '../base-speaker';
import type { MediaRequest, SpeakerCapabilities, SpeakerInfo, SpeakerSnapshot } from '../driver';
import type { ReceiverAddress } from './session';
import type { AirPlayStream, StreamMember } from './stream';

export interface SpeakerHost {
  playOn(speakers: AirPlaySpeaker[], media: MediaRequest): Promise<PromiseSettledResult<void>[]>;
  rejoin(speaker: AirPlaySpeaker, stream: AirPlayStream): Promise<void>;
  lost(speaker: AirPlaySpeaker, err: Error): void;
}

/** What snapshot() keeps: the stream the speaker was part of, to rejoin it in sync. */
interface AirPlaySnapshotData {
  stream?: AirPlayStream;
}

/**
 * One AirPlay receiver. Its playback is membership in an AirPlayStream (alone or with others);
 * volume is its own (SET_PARAMETER on its session, kept for the next session when idle).
 */
export class AirPlaySpeaker extends BaseSpeaker {
  readonly capabilities: SpeakerCapabilities = {
    mute: false,
    snapshot: true,
    seek: true,
    syncGroup: true,
    // AirPlay 1 shows no other sender's session to take a snapshot of, and cannot start one for it.
    restoreLimit:
      'an AirPlay receiver is not handed back to another sender (a phone) whose stream the announcement took over: that sender has to start again',
  };
  stream?: AirPlayStream;
  member?: StreamMember;

  constructor(
    id: string,
    info: SpeakerInfo,
    public address: ReceiverAddress,
    private readonly host: SpeakerHost,
    private readonly log: Logger,
    volume: number,
  ) {
    super(id, 'airplay', info, { volume, available: false });
  }

  markAvailable(available: boolean): void {
    this.setAvailable(available, () => {
      if (!available) this.markStopped('error', 'the receiver is unreachable');
    });
  }

  markPlaying(): void {
    this.setPlayState('playing');
  }
  markPaused(): void {
    this.setPlayState('paused');
  }
  markStopped(reason: 'ended' | 'error' | 'stopped', detail?: string): void {
    this.stream = undefined;
    this.member = undefined;
    this.setPlayState('stopped', reason, detail);
  }
  rename(name: string): void {
    if (name !== this.info().name) this.updateInfo({ name });
  }

  async play(media: MediaRequest): Promise<void> {
    const [r] = await this.host.playOn([this], media);
    if (r.status === 'rejected') throw r.reason;
  }

  async pause(): Promise<void> {
    if (!this.stream || this.state !== 'playing') return;
    await this.stream.pause();
    this.markPaused();
  }

  async resume(): Promise<void> {
    if (!this.stream || this.state !== 'paused') return;
    this.stream.resume();
    this.markPlaying();
  }

  async stop(): Promise<void> {
    const { stream, member } = this;
    if (stream && member) await stream.remove(member);
    if (this.state !== 'stopped') this.markStopped('stopped');
  }

  position(): number | undefined {
    return this.stream ? this.stream.position() : undefined;
  }

  async setVolume(volume: number): Promise<void> {
    this.setReportedVolume(volume);
    if (this.member) {
      try {
        await this.member.session.setVolume(this.volume);
      } catch (e) {
        this.log.debug({ err: (e as Error).message }, 'airplay volume not applied');
        throw e;
      }
    }
  }

  async snapshot(): Promise<SpeakerSnapshot> {
    const s = this.stream;
    return {
      state: this.state,
      url: s?.url,
      duration: s?.duration,
      position: s?.position(),
      volume: this.volume,
      takenAt: Date.now(),
      driver: { stream: s } satisfies AirPlaySnapshotData,
    };
  }

  async restore(snapshot: SpeakerSnapshot, options?: { volumeOnly?: boolean }): Promise<void> {
    this.setReportedVolume(snapshot.volume);
    if (options?.volumeOnly) {
      if (this.member) await this.member.session.setVolume(this.volume);
      return;
    }
    const data = (snapshot.driver ?? {}) as AirPlaySnapshotData;
    const running = data.stream && (data.stream.state === 'playing' || data.stream.state === 'paused') && data.stream.members.size > 0;
    if (running && snapshot.state !== 'stopped') {
      await this.host.rejoin(this, data.stream!);
      return;
    }
    if (snapshot.state === 'playing' && snapshot.url) {
      const elapsed = Math.max(0, (Date.now() - snapshot.takenAt) / 1000);
      await this.play({ url: snapshot.url, duration: snapshot.duration, startAt: (snapshot.position ?? 0) + elapsed });
      return;
    }
    await this.stop();
  }

  updateName(name: string): void {
    this.rename(name);
  }
}
