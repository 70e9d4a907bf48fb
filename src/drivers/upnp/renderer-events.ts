import type { Clock } from '../../core/clock';
import type { Logger } from '../../logger';
import type { UpnpConfig } from './config';
import type { RendererDescription, ServiceEndpoint } from '../../protocols/upnp/description-parse';
import { parseLastChange } from '../../protocols/upnp/gena';
import { GenaSubscription, SubscribeError, type GenaServer } from '../../protocols/upnp/gena-subscriber';

/** An SSDP announcement's datagrams (one per device type and service, sent twice) arrive within this. */
const ANNOUNCEMENT_BURST_MS = 3000;

export interface RendererEventsOptions {
  gena: GenaServer;
  config: UpnpConfig;
  clock: Clock;
  log: Logger;
  localAddress?: string;
  /** LastChange variables of AVTransport and of RenderingControl. */
  onTransport: (vars: Record<string, string>) => void;
  onRendering: (vars: Record<string, string>) => void;
  /** A renewal failed: the renderer may be gone. */
  onLost: (why: string) => void;
}

/**
 * The renderer's GENA subscriptions (AVTransport and RenderingControl), their LastChange
 * events, and their renewal when the renderer re-announces itself or restarts. Eventing is a
 * convenience: polling sees everything that matters, so a refused subscription is logged.
 */
export class RendererEvents {
  private avt?: GenaSubscription;
  private rc?: GenaSubscription;
  private lastCheck = 0;

  constructor(private readonly opts: RendererEventsOptions) {}

  /**
   * Subscribes to the renderer at this description; the old subscriptions are dropped first
   * (unsubscribed when the renderer kept its address and still answered).
   */
  async attach(description: RendererDescription, callbackHost: string, unsubscribeOld: boolean): Promise<void> {
    await this.close(unsubscribeOld);
    this.avt = this.subscription(description.avTransport, callbackHost, this.opts.onTransport);
    this.rc = description.renderingControl ? this.subscription(description.renderingControl, callbackHost, this.opts.onRendering) : undefined;
    await Promise.all([this.subscribe(this.avt), this.rc && this.subscribe(this.rc)]);
  }

  /**
   * Renews both subscriptions now: after a restart the renderer has forgotten our SIDs,
   * answers 412, and gets fresh subscriptions. One announcement is a burst of datagrams,
   * hence the short hold-off (skipped when its boot id says it restarted). False when held off.
   */
  renew(rebooted: boolean): boolean {
    const now = this.opts.clock.now();
    if (!rebooted && now - this.lastCheck < ANNOUNCEMENT_BURST_MS) return false;
    this.lastCheck = now;
    void this.avt?.renew();
    void this.rc?.renew();
    return true;
  }

  /** Ends both subscriptions (UNSUBSCRIBE when the renderer can still hear it). */
  async close(unsubscribe: boolean): Promise<void> {
    const [avt, rc] = [this.avt, this.rc];
    this.avt = undefined;
    this.rc = undefined;
    await Promise.all([avt?.close(unsubscribe), rc?.close(unsubscribe)]);
  }

  private subscription(service: ServiceEndpoint, callbackHost: string, onVars: (vars: Record<string, string>) => void): GenaSubscription {
    const { gena, config, clock, log, localAddress } = this.opts;
    return new GenaSubscription({
      server: gena,
      eventSubUrl: service.eventSubUrl,
      callbackHost,
      timeoutSeconds: config.subscriptionSeconds,
      requestTimeoutMs: config.requestTimeoutMs,
      localAddress,
      clock,
      logger: log,
      onEvent: (properties) => {
        const vars = lastChangeOf(properties);
        if (vars) onVars(vars);
      },
      onLost: (e) => this.opts.onLost(`event subscription renewal failed: ${e.message}`),
    });
  }

  private async subscribe(sub: GenaSubscription): Promise<void> {
    try {
      await sub.subscribe();
    } catch (e) {
      if (!(e instanceof SubscribeError)) throw e;
      this.opts.log.warn({ err: e.message }, 'the renderer refused an event subscription; relying on polling meanwhile');
      sub.retryLater();
    }
  }
}

/** The variables of a GENA LastChange property, or undefined when it is absent or malformed. */
function lastChangeOf(properties: Record<string, string>): Record<string, string> | undefined {
  if (!properties.LastChange) return undefined;
  try {
    return parseLastChange(properties.LastChange);
  } catch {
    return undefined;
  }
}
