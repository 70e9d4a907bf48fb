import type { Clock } from '../../core/clock';
import type { Logger } from '../../logger';
import { BaseSpeaker } from '../base-speaker';
import type { MediaRequest, SpeakerCapabilities, SpeakerInfo, SpeakerSnapshot } from '../driver';
import type { UpnpConfig } from './config';
import { fetchDescription, type RendererDescription } from '../../protocols/upnp/description-parse';
import type { GenaServer } from '../../protocols/upnp/gena-subscriber';
import { diffInfo, infoOf, upnpDeviceId } from './info';
import { RendererControl } from './renderer-control';
import { RendererEvents } from './renderer-events';
import { readSnapshot, restoreSnapshot } from './renderer-snapshot';
import { RendererTransport, type PlayTicket } from './renderer-transport';
import { RendererVolume } from './renderer-volume';

export { upnpDeviceId, type PlayTicket };

/** What a renderer needs from its driver. */
export interface RendererContext {
  config: UpnpConfig;
  clock: Clock;
  logger: Logger;
  gena: GenaServer;
  /** The interface address requests are sent from, when one is configured. */
  localAddress?: string;
  /** Recognises this hub's media URLs (see UpnpDriverOptions.isHubMediaUrl). */
  isHubMediaUrl?: (url: string) => boolean;
}

/**
 * One UPnP MediaRenderer as a hub speaker, and its lifecycle: found, (re)connected, gone,
 * closed. The concerns are parts of their own: the SOAP plumbing (renderer-control.ts), the
 * AVTransport playback with its polling (renderer-transport.ts), volume and mute
 * (renderer-volume.ts), GENA events (renderer-events.ts), snapshot and restore for
 * announcements (renderer-snapshot.ts).
 */
export class UpnpSpeaker extends BaseSpeaker {
  readonly udn: string;
  readonly capabilities: SpeakerCapabilities = { mute: true, snapshot: true, seek: true, syncGroup: false };
  /** The renderer's SSDP boot id, when it sends one: a new value means it restarted. */
  bootId?: string;
  private desc: RendererDescription;
  private readonly log: Logger;
  private readonly control: RendererControl;
  private readonly transport: RendererTransport;
  private readonly levels: RendererVolume;
  private readonly events: RendererEvents;
  private verifying?: Promise<boolean>;

  constructor(
    description: RendererDescription,
    private readonly ctx: RendererContext,
  ) {
    super(upnpDeviceId(description.udn), 'upnp', infoOf(description), { available: false });
    this.desc = description;
    this.udn = description.udn;
    this.log = ctx.logger.child({ deviceId: this.id });
    this.control = new RendererControl({
      description: () => this.desc,
      config: ctx.config,
      localAddress: ctx.localAddress,
      log: this.log,
      onNoAnswer: (why) => void this.verify(why),
      clock: ctx.clock,
    });
    this.levels = new RendererVolume(this.control, (v) => this.emit('volume', v));
    this.transport = new RendererTransport({
      control: this.control,
      config: ctx.config,
      clock: ctx.clock,
      log: this.log,
      isHubMediaUrl: ctx.isHubMediaUrl,
      host: {
        isAvailable: () => this.available,
        currentState: () => this.state,
        address: () => this.desc.address,
        setState: (state, reason, detail) => this.setPlayState(state, reason, detail),
        assertAvailable: () => this.assertAvailable('the renderer is not reachable'),
      },
    });
    this.events = new RendererEvents({
      gena: ctx.gena,
      config: ctx.config,
      clock: ctx.clock,
      log: this.log,
      localAddress: ctx.localAddress,
      onTransport: (vars) => {
        this.control.noteEvent(vars);
        this.transport.onEvent(vars);
      },
      onRendering: (vars) => this.levels.onEvent(vars),
      onLost: (why) => void this.verify(why),
    });
  }

  // ---- Speaker -------------------------------------------------------------------------

  /** 0–50; 0 while the renderer is muted. */
  override get volume(): number {
    return this.levels.hub;
  }
  get location(): string {
    return this.desc.location;
  }
  /** True while media is loaded (playing or paused). */
  get busy(): boolean {
    return this.transport.busy;
  }

  override info(): SpeakerInfo {
    return infoOf(this.desc);
  }

  async play(media: MediaRequest): Promise<void> {
    const ticket = await this.load(media);
    await this.start(ticket);
    await this.confirm(ticket);
  }

  /** The three steps of a play, which the driver sends to a group's renderers step by step. */
  load(media: MediaRequest): Promise<PlayTicket> {
    return this.transport.load(media);
  }
  start(ticket: PlayTicket): Promise<void> {
    return this.transport.start(ticket);
  }
  confirm(ticket: PlayTicket): Promise<void> {
    return this.transport.confirm(ticket);
  }

  pause(): Promise<void> {
    return this.transport.pause();
  }
  resume(): Promise<void> {
    return this.transport.resume();
  }
  stop(): Promise<void> {
    return this.transport.stop();
  }
  position(): number | undefined {
    return this.transport.position();
  }

  async setVolume(volume: number): Promise<void> {
    this.assertAvailable('the renderer is not reachable');
    await this.levels.set(volume);
  }

  isMuted(): boolean {
    return this.levels.isMuted;
  }

  async setMute(muted: boolean): Promise<void> {
    this.assertAvailable('the renderer is not reachable');
    await this.levels.setMute(muted);
  }

  async snapshot(): Promise<SpeakerSnapshot> {
    this.assertAvailable('the renderer is not reachable');
    return readSnapshot(this.control, this.levels, this.ctx.clock);
  }

  /** The media stays the other app's: the hub keeps no playback of its own on it. */
  async restore(snap: SpeakerSnapshot, options: { volumeOnly?: boolean } = {}): Promise<void> {
    this.assertAvailable('the renderer is not reachable');
    await restoreSnapshot(snap, { volume: this.levels, transport: this.transport }, options);
  }

  // ---- lifecycle (driver side) -----------------------------------------------------------

  /**
   * (Re)attaches to the renderer at this description: subscribes to its events, reads its
   * volume and transport state, and makes the speaker available. Throws when the renderer
   * does not answer.
   */
  async connect(description: RendererDescription, callbackHost: string): Promise<void> {
    const before = infoOf(this.desc);
    const moved = description.location !== this.desc.location;
    const wasAvailable = this.available;
    this.desc = description;
    this.transport.reopen();
    await this.events.attach(description, callbackHost, !moved && this.available);
    await this.levels.attach(description);
    // A renderer at a new address has restarted: whatever it played is gone.
    if (moved) this.transport.restarted();
    // Found or back after a gap: whatever it plays now, the hub did not see start.
    if (!wasAvailable) await this.transport.reconcile();
    const after = infoOf(description);
    if (moved) this.log.info({ location: description.location }, 'renderer moved; reconnected at its new address');
    const changed = diffInfo(before, after);
    if (Object.keys(changed).length) this.emit('info', changed);
    this.setAvailable(true, () => this.log.info({ name: after.name, address: `${after.ipAddress}:${after.port}` }, 'renderer available'));
  }

  /**
   * The renderer said it is gone (byebye), stopped answering, or its announcement expired:
   * it leaves the playback with an error, and comes back through connect().
   */
  markUnavailable(reason: string): void {
    this.setAvailable(false, () => {
      void this.events.close(false);
      this.log.warn({ reason }, 'renderer unavailable');
      this.transport.lost(reason);
    });
  }

  /** Checks the renderer still answers (its description); marks it unavailable if not. */
  verify(reason = 'it does not answer'): Promise<boolean> {
    if (!this.available) return Promise.resolve(false);
    this.verifying ??= (async () => {
      try {
        const { description } = await fetchDescription(this.desc.location, {
          ...this.control.requestOptions(),
          timeoutMs: Math.min(this.ctx.config.requestTimeoutMs, 2500),
        });
        if (description.udn === this.udn) return true;
        this.markUnavailable('another device answers at its address');
        return false;
      } catch (e) {
        this.markUnavailable(`${reason} (${(e as Error).message})`);
        return false;
      } finally {
        this.verifying = undefined;
      }
    })();
    return this.verifying;
  }

  /** The renderer re-announced itself (or restarted: a new boot id): renew its subscriptions. */
  checkSubscriptions(rebooted = false): void {
    if (!this.available || !this.events.renew(rebooted)) return;
    // Whatever it played died with the old process.
    if (rebooted) this.transport.restarted();
  }

  /** Hub shutdown: stop polling and unsubscribe. The core has already stopped playback. */
  async close(): Promise<void> {
    this.transport.close();
    await this.events.close(this.available);
  }
}
