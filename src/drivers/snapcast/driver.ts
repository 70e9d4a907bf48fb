import { EventEmitter } from 'node:events';
import type { Clock } from '../../core/clock';
import type { Logger } from '../../logger';
import type { DriverEvents, MediaRequest, OverlayHandle, OverlayRequest, Speaker, SpeakerDriver } from '../driver';
import { SnapcastSpeaker } from './client-speaker';
import { resolveServers, SnapcastConfigSchema, type SnapcastConfig } from './config';
import { SnapServer } from './server';

/** ffmpeg's first PCM and the regroup of the clients, generously (ms), ahead of an agreed start instant. */
const START_PREPARE_MS = 500;

export interface SnapcastDriverOptions {
  config: SnapcastConfig;
  clock: Clock;
  logger: Logger;
}

/**
 * Snapcast: every snapclient of the configured snapservers is a speaker. The hub decodes
 * the media itself and feeds one stream per server; the clients a play targets are put
 * in one group on that stream, which snapcast plays in sync.
 */
export class SnapcastDriver extends EventEmitter<DriverEvents> implements SpeakerDriver {
  readonly name = 'snapcast';
  private readonly servers: SnapServer[];
  private readonly log: Logger;
  /** The largest snapserver buffer configured (ms): a start instant must leave room for it. */
  private readonly maxBufferMs: number;

  constructor(options: SnapcastDriverOptions) {
    super();
    // Accepts an unparsed object too (embedders, tests): defaults are applied either way.
    const config = SnapcastConfigSchema.parse(options.config);
    // The registry hands every driver a logger already tagged with its name.
    this.log = options.logger;
    const seen = new Set<string>();
    const resolved = resolveServers(config);
    this.maxBufferMs = Math.max(0, ...resolved.map((s) => s.bufferMs));
    this.servers = resolved
      .filter((server) => {
        if (seen.has(server.address)) {
          this.log.warn({ server: server.address }, 'snapserver listed twice; using it once');
          return false;
        }
        seen.add(server.address);
        return true;
      })
      .map(
        (server) =>
          new SnapServer({
            server,
            config,
            clock: options.clock,
            logger: this.log,
            added: (s) => this.emit('speakerAdded', s),
          }),
      );
  }

  /** Connects to every server; resolves once each has answered or failed its first attempt (it keeps retrying). */
  async start(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.start()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.stop()));
  }

  speakers(): SnapcastSpeaker[] {
    return this.servers.flatMap((s) => s.list());
  }

  /**
   * Cross-family start (see HubStream.holdUntilStartInstant): what a start instant must leave
   * room for, ffmpeg's start and the regroup, then snapserver's buffer.
   */
  startLeadMs(): number {
    return START_PREPARE_MS + this.maxBufferMs;
  }

  /**
   * One decode per server feeding one stream, with all target clients of that server in
   * one group: sample-synchronous within a server. Servers play independently.
   */
  async playGroup(speakers: Speaker[], media: MediaRequest): Promise<PromiseSettledResult<void>[]> {
    return this.perServer(speakers, (server, list) => server.playGroup(list, media));
  }

  /** A ducked announcement mixed into the music in place, per server (SnapServer.overlay). */
  overlay(speakers: Speaker[], request: OverlayRequest): Promise<PromiseSettledResult<OverlayHandle>[]> {
    return this.perServer(speakers, (server, list) => server.overlay(list, request));
  }

  private async perServer<T>(
    speakers: Speaker[],
    run: (server: SnapServer, list: SnapcastSpeaker[]) => Promise<PromiseSettledResult<T>[]>,
  ): Promise<PromiseSettledResult<T>[]> {
    const results: PromiseSettledResult<T>[] = speakers.map(() => ({
      status: 'rejected',
      reason: new Error('not a speaker of this Snapcast driver'),
    }));
    await Promise.all(
      this.servers.map(async (server) => {
        const idx = speakers.flatMap((s, i) => (s instanceof SnapcastSpeaker && server.owns(s) ? [i] : []));
        if (!idx.length) return;
        const settled = await run(
          server,
          idx.map((i) => speakers[i] as SnapcastSpeaker),
        );
        idx.forEach((i, k) => (results[i] = settled[k]));
      }),
    );
    return results;
  }
}
