import type { Logger } from '../../logger';
import { systemClock, type Clock } from '../../core/clock';
import type { UpnpConfig } from './config';
import type { RendererDescription, ServiceEndpoint } from '../../protocols/upnp/description-parse';
import { parseTime } from '../../protocols/upnp/didl';
import { NetworkError } from '../../protocols/upnp/http-client';
import { SoapFault, soapCall, type SoapArgs } from '../../protocols/upnp/soap-client';

/** AVTransport's state as GetTransportInfo reports it (upper case). */
export interface Transport {
  state: string;
  status: string;
}

/** GetPositionInfo: seconds into the media and its length, when the renderer says. */
export interface Position {
  rel?: number;
  duration?: number;
}

export interface RendererControlOptions {
  /** The renderer's current description (it changes when the renderer moves). */
  description: () => RendererDescription;
  config: UpnpConfig;
  /** The interface address requests are sent from, when one is configured. */
  localAddress?: string;
  log: Logger;
  /** A request found the renderer not answering: the speaker checks whether it is gone. */
  onNoAnswer: (why: string) => void;
  /** Ages what the hub knows of idleness (IDLE_TRUST_MS); the system clock by default. */
  clock?: Clock;
}

/**
 * How long a renderer known to be idle stays so for setUri (ms). Another app may start it
 * meanwhile, and a renderer whose events are lost (or that sends none) would not tell: past
 * this it gets a Stop first again. The loads that gain from skipping the Stop come right after
 * a read (an announcement's snapshot, the end of a clip seen by a poll), well within it.
 */
export const IDLE_TRUST_MS = 2000;

/**
 * The control plumbing of one renderer: SOAP actions on its services, one at a time when
 * they change its transport, and the reads every other part needs (transport, position, URI).
 */
export class RendererControl {
  private chain: Promise<unknown> = Promise.resolve();
  /** The renderer refused a new URI until stopped once: every load stops it first (setUri). */
  private stopBeforeLoad = false;
  /**
   * When the renderer was last known to be idle (STOPPED / NO_MEDIA_PRESENT): read so, or
   * stopped by us, with no Play or Pause sent since; undefined when not. Unknown counts as not
   * idle. setUri loads a renderer known idle within IDLE_TRUST_MS without a Stop.
   */
  private idleAt: number | undefined;
  private readonly clock: Clock;
  /** Play/Pause (and the like) sent so far: a read that a later Play overtook says nothing. */
  private starts = 0;

  constructor(private readonly opts: RendererControlOptions) {
    this.clock = opts.clock ?? systemClock;
  }

  private get knownIdle(): boolean {
    return this.idleAt !== undefined && this.clock.now() - this.idleAt <= IDLE_TRUST_MS;
  }

  requestOptions(): { timeoutMs: number; localAddress?: string } {
    return { timeoutMs: this.opts.config.requestTimeoutMs, localAddress: this.opts.localAddress };
  }

  /** A SOAP call; a renderer that does not answer is checked, and marked unavailable if gone. */
  async call(service: ServiceEndpoint, action: string, args: SoapArgs): Promise<Record<string, string>> {
    try {
      return await soapCall(service, action, args, this.requestOptions());
    } catch (e) {
      if (e instanceof NetworkError) {
        this.opts.log.debug({ action, err: e.message }, 'control request failed');
        this.opts.onNoAnswer(`${action} failed`);
        throw new Error(`the renderer did not answer ${action}: ${e.message}`);
      }
      throw e;
    }
  }

  /** An AVTransport action on instance 0; keeps what it tells of idleness (knownIdle). */
  async avt(action: string, args: SoapArgs = {}): Promise<Record<string, string>> {
    if (STARTS.has(action)) {
      this.starts++;
      this.idleAt = undefined;
    }
    const starts = this.starts;
    const r = await this.call(this.opts.description().avTransport, action, { InstanceID: 0, ...args });
    if (action === 'Stop' && starts === this.starts) this.idleAt = this.clock.now();
    return r;
  }

  /** An AVTransport event's TransportState: only ever a reason to stop first (events may be stale). */
  noteEvent(vars: Record<string, string>): void {
    if (vars.TransportState && !isIdle(vars.TransportState.toUpperCase())) this.idleAt = undefined;
  }

  /** A RenderingControl action on instance 0, Master channel. */
  rc(action: string, args: SoapArgs = {}): Promise<Record<string, string>> {
    const service = this.opts.description().renderingControl;
    if (!service) return Promise.reject(new Error('the renderer has no RenderingControl service'));
    return this.call(service, action, { InstanceID: 0, Channel: 'Master', ...args });
  }

  get hasRenderingControl(): boolean {
    return this.opts.description().renderingControl !== undefined;
  }

  async readTransport(): Promise<Transport> {
    const starts = this.starts;
    const r = await this.avt('GetTransportInfo');
    const transport = { state: (r.CurrentTransportState ?? '').toUpperCase(), status: (r.CurrentTransportStatus ?? '').toUpperCase() };
    if (!isIdle(transport.state)) this.idleAt = undefined;
    else if (starts === this.starts) this.idleAt = this.clock.now();
    return transport;
  }

  async readPosition(): Promise<Position> {
    const r = await this.avt('GetPositionInfo');
    const duration = parseTime(r.TrackDuration);
    return { rel: parseTime(r.RelTime), duration: duration ? duration : undefined };
  }

  /** The URI the renderer has loaded: GetMediaInfo's CurrentURI, else GetPositionInfo's TrackURI. */
  async currentUri(): Promise<string> {
    const media = await this.avt('GetMediaInfo').catch(() => undefined);
    if (media?.CurrentURI) return media.CurrentURI;
    const pos = await this.avt('GetPositionInfo').catch(() => undefined);
    return pos?.TrackURI ?? '';
  }

  /**
   * SetAVTransportURI; a Stop first unless the renderer is known to be idle. AVTransport lets a
   * renderer take a new URI in any state, but gmediarender (gstreamer) races doing so while it
   * plays: 1 load in 30–60 left it PLAYING with the position stuck and nothing heard
   * ("about-to-finish cb: setting uri (null)", then "setting play state failed" in its log), which
   * a Stop first never did in 80. A renderer known idle for now (issue 30: an announcement on a
   * speaker the snapshot just read as stopped) gets no Stop: one round trip less before the
   * first sound.
   * A renderer that refuses a new URI even then (UPnP 701 Transition not available, 705
   * Transport locked …) is stopped and asked again, and from then on always stopped first.
   */
  async setUri(url: string, metadata: string, stillWanted: () => void): Promise<void> {
    const log = this.opts.log;
    if (!this.stopBeforeLoad && this.knownIdle) {
      try {
        await this.avt('SetAVTransportURI', { CurrentURI: url, CurrentURIMetaData: metadata });
        return;
      } catch (e) {
        if (!(e instanceof SoapFault)) throw e;
        log.debug({ err: e.message }, 'SetAVTransportURI refused; trying again after a Stop');
        this.stopBeforeLoad = true;
        log.info('this renderer takes a new URI only after a Stop: stopping it first from now on');
      }
    }
    await this.avt('Stop').catch((e) => {
      // 701 "transition not available" when nothing is loaded: already stopped, which is all we want.
      if (!(e instanceof SoapFault)) throw e;
    });
    stillWanted();
    await this.avt('SetAVTransportURI', { CurrentURI: url, CurrentURIMetaData: metadata });
  }

  /** Runs control actions one after another, so a Stop never overtakes the Play it cancels. */
  serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn, fn);
    this.chain = run.catch(() => undefined);
    return run;
  }
}

/** Media loaded and in use: playing, paused, or on its way (TRANSITIONING, PAUSED_RECORDING aside). */
export function isActive(state: string): boolean {
  return state === 'PLAYING' || state === 'PAUSED_PLAYBACK' || state === 'TRANSITIONING';
}

/** Actions that may leave the renderer playing or paused: a read sent before one is out of date. */
const STARTS = new Set(['Play', 'Pause', 'Next', 'Previous']);

export function isIdle(state: string): boolean {
  return state === 'STOPPED' || state === 'NO_MEDIA_PRESENT';
}

export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}

export function isLoopbackUrl(url: string): boolean {
  try {
    return isLoopbackHost(new URL(url).hostname.replace(/^\[|\]$/g, ''));
  } catch {
    return false;
  }
}
