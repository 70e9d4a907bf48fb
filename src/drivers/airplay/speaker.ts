import type { Logger } from '../../logger';
import { BaseSpeaker } from '../base-speaker';
import type { MediaRequest, SpeakerCapabilities, SpeakerInfo, SpeakerSnapshot } from '../driver';
import type { ReceiverAddress } from './session';
import type { AirPlayStream, StreamMember } from './stream';

export interface SpeakerHost {
  playOn(speakers: AirPlaySpeaker[], media: MediaRequest): Promise<PromiseSettledResult<void>[]>;
  rejoin(speaker: AirPlaySpeaker, stream: AirPlayStream): Promise<void>;
  /** The speakers that hear `stream` now (members, announced ones whose music is not yet given back included). */
  membersOf(stream: AirPlayStream): AirPlaySpeaker[];
  lost(speaker: AirPlaySpeaker, err: Error): void;
}

/** How long a receiver that failed the protocol stays inactive, first and at most (ms); doubles between. */
const QUARANTINE_MIN_MS = 10_000;
const QUARANTINE_MAX_MS = 10 * 60_000;

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
    // The hub encodes what the receivers play: a ducked announcement is mixed into it (duckUnavailable says when not).
    duck: true,
    // AirPlay 1 shows no other sender's session to take a snapshot of, and cannot start one for it.
    restoreLimit:
      'an AirPlay receiver is not handed back to another sender (a phone) whose stream the announcement took over: that sender has to start again',
  };
  stream?: AirPlayStream;
  member?: StreamMember;
  /** After a protocol fault: inactive until then, whatever the reachability probe says. */
  private quarantineUntil = 0;
  private quarantineMs = 0;

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

  markAvailable(available: boolean, why = 'the receiver is unreachable'): void {
    // A port that accepts connections says nothing about a receiver that broke the protocol.
    if (available && Date.now() < this.quarantineUntil) return;
    this.setAvailable(available, () => {
      if (!available) this.markStopped('error', why);
    });
  }

  /**
   * The receiver broke the protocol or went silent in a session: it is inactive (Active false)
   * for a while that doubles with each fault in a row, so a hostile receiver is not offered
   * to every play and costs the hub one failed handshake per period at most.
   * Returns how long it stays out (ms).
   */
  peerFailed(err: Error): number {
    this.quarantineMs = Math.min(Math.max(QUARANTINE_MIN_MS, this.quarantineMs * 2), QUARANTINE_MAX_MS);
    this.quarantineUntil = Date.now() + this.quarantineMs;
    this.markAvailable(false, `the receiver failed: ${err.message}`);
    return this.quarantineMs;
  }

  /** A session that worked: the next fault starts the quarantine afresh. */
  peerWorked(): void {
    this.quarantineMs = 0;
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
    // Paused during its ducked announcement: it leaves the mix (the announcement is over for it).
    this.stream.duck?.leave(this.id);
    await this.stream.pause();
    this.markPaused();
  }

  async resume(): Promise<void> {
    if (!this.stream || this.state !== 'paused') return;
    this.stream.resume();
    this.markPlaying();
  }

  /**
   * Duck only mixes what the hub sends, and only for all who hear it: the receiver must play
   * the hub's music, and every receiver of its stream must be a target (one stream, one mix).
   */
  duckUnavailable(targets: readonly string[]): string | undefined {
    const s = this.stream;
    if (!s || !this.member || (s.state !== 'playing' && s.state !== 'paused')) {
      return 'AirPlay: the receiver plays no music from the hub to mix the announcement into';
    }
    if (s.state === 'paused') return 'AirPlay: the music on the receiver is paused, so there is nothing to mix the announcement into';
    const others = this.host.membersOf(s).filter((m) => !targets.includes(m.id));
    if (others.length) {
      return `AirPlay: the announcement is for some of the receivers sharing one stream (${others.map((m) => m.info().name).join(', ')} would hear it too)`;
    }
    return undefined;
  }

  async stop(): Promise<void> {
    const { stream, member } = this;
    // Stopped during its ducked announcement: once no target is left, the music fades back up for the others.
    stream?.duck?.leave(this.id);
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
