import { EventEmitter } from 'node:events';
import { createHash } from 'node:crypto';
import type { Clock } from '../../core/clock';
import { digitId, type DriverEvents, type OverlayHandle, type OverlayRequest, type SpeakerDriver } from '../driver';
import type { Logger } from '../../logger';
import { pointsAtLocalAddress } from '../../net/local-address';
import { MediaDownloads } from './media-probe';
import { VirtualSpeaker } from './virtual-speaker';

export interface VirtualDriverOptions {
  count: number;
  /** Optional names, by index; the rest are "Virtual Speaker N". */
  names?: string[];
  /** Initial volume 0–50. */
  volume?: number;
  /** Longest an announcement of unknown length plays (speakers.virtual.maxLiveAnnouncementSeconds). */
  maxLiveAnnouncementSeconds?: number;
  clock: Clock;
  /** Reported as the speakers' firmware version. */
  version: string;
  /** Fetch failure causes go here at debug level (clients get one message for all causes). */
  logger?: Logger;
  /** webMedia.refuseLocalAddresses: redirects to loopback/link-local addresses are refused too. */
  refuseLocalAddresses?: boolean;
  /** speakers.virtual.mix: the speakers mix announcements over their music (capabilities.duck). */
  mix?: boolean;
}

/** The embedded default: N speakers with realistic, stable device records. */
export class VirtualDriver extends EventEmitter<DriverEvents> implements SpeakerDriver {
  readonly name = 'virtual';
  private readonly list: VirtualSpeaker[];
  /** One download per URL for all of this driver's speakers (a party play fetches once). */
  readonly downloads: MediaDownloads;

  constructor(options: VirtualDriverOptions) {
    super();
    this.downloads = new MediaDownloads(15000, options.refuseLocalAddresses ? pointsAtLocalAddress : undefined);
    const log = options.logger?.child({ component: 'virtual' });
    const groupId = digitId('virtual-group', 10);
    this.list = Array.from({ length: options.count }, (_, i) => {
      const seed = `virtual:${i + 1}`;
      return new VirtualSpeaker(
        digitId(seed),
        {
          name: options.names?.[i] ?? `Virtual Speaker ${i + 1}`,
          groupName: 'Virtual Speakers',
          groupId,
          modelName: 'SpeakerHub Virtual Speaker',
          version: options.version,
          role: 21,
          macAddress: localMac(seed),
          ipAddress: '127.0.0.1',
          port: 0,
          wifiSignalStrength: -40 - ((i * 7) % 30),
        },
        options.volume ?? 20,
        options.clock,
        this.downloads,
        log,
        options.maxLiveAnnouncementSeconds,
        options.mix,
      );
    });
  }

  async start(): Promise<void> {
    for (const s of this.list) this.emit('speakerAdded', s);
  }

  async stop(): Promise<void> {
    await Promise.all(this.list.map((s) => s.stop()));
  }

  speakers(): VirtualSpeaker[] {
    return [...this.list];
  }

  /** Overlays mixed over the music, each speaker on its own (speakers.virtual.mix). */
  overlay(speakers: VirtualSpeaker[], request: OverlayRequest): Promise<PromiseSettledResult<OverlayHandle>[]> {
    return Promise.allSettled(speakers.map((s) => s.mixOverlay(request)));
  }

  speaker(index: number): VirtualSpeaker {
    const s = this.list[index];
    if (!s) throw new RangeError(`no virtual speaker #${index}`);
    return s;
  }
}

/** A locally administered unicast MAC (first octet x2), stable per speaker. */
function localMac(seed: string): string {
  const b = createHash('sha256').update(`mac:${seed}`).digest().subarray(0, 6);
  b[0] = (b[0] & 0xfc) | 0x02;
  return [...b]
    .map((x) => x.toString(16).padStart(2, '0'))
    .join(':')
    .toUpperCase();
}
