import { EventEmitter } from 'node:events';
import type { Clock } from '../../core/clock';
import type { Logger } from '../../logger';
import type { DriverEvents, Speaker, SpeakerDriver } from '../driver';
import { resolveMpdServers, type MpdConfig } from './config';
import type { MediaRoute } from './media-route';
import { MpdSpeaker } from './speaker';

/** One speaker per configured MPD server; each keeps its own connection (and reconnects by itself). */
export class MpdDriver extends EventEmitter<DriverEvents> implements SpeakerDriver {
  readonly name = 'mpd';
  private readonly list: MpdSpeaker[] = [];

  constructor(private readonly opts: { config: MpdConfig; clock: Clock; logger: Logger; route?: MediaRoute }) {
    super();
  }

  async start(): Promise<void> {
    for (const server of resolveMpdServers(this.opts.config)) {
      if (this.list.some((s) => s.server.address === server.address)) continue;
      const speaker = new MpdSpeaker(server, this.opts.config, this.opts.clock, this.opts.logger.child({ mpd: server.address }), this.opts.route);
      this.list.push(speaker);
      // Added at once (inactive until connected), so a server down at start still shows up.
      this.emit('speakerAdded', speaker);
      speaker.start();
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.list.map((s) => s.close()));
  }

  speakers(): Speaker[] {
    return [...this.list];
  }
}
