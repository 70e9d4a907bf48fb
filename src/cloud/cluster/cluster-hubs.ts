import type { Logger } from '../../logger';
import type { BrokerLink } from '../relay/hub-link';
import type { HubDirectory, HubList, HubRegistry, HubSummary } from '../relay/hub-registry';
import type { ClusterBus } from './bus';
import { KEY_PREFIX } from './keys';
import type { BusMessage } from './messages';

export interface ClusterHubsOptions {
  /** How long a link stays listed without renewal (a dead instance's links drop out after it). */
  leaseMs: number;
  /** Hub links one account may hold across the cluster; a further one is refused while they are live. */
  maxLinksPerUser: number;
  /** How long a listing waits for Redis before answering with this instance's links alone. */
  listTimeoutMs: number;
}

const hubsKey = (userId: string) => `${KEY_PREFIX}hubs:${userId}`;

/**
 * The cluster's list of each user's linked hubs, kept in Redis next to the link leases: a
 * hash per user, one field per link with its own expiry (scripts.ts), renewed with the
 * leases. Any instance lists a user's hubs from it, whichever instances hold the links; and
 * the cap of links per account is counted there, so it holds across instances: a new link
 * beyond it is refused by its instance (listed links are live: their instances renew only
 * links that answer heartbeats). Without Redis each instance lists its own links (marked
 * partial) and caps them alone (the registry's own cap).
 */
export class ClusterHubs implements HubDirectory {
  private readonly renewTimer: NodeJS.Timeout;
  private readonly me: string;

  constructor(
    private readonly bus: ClusterBus,
    private readonly registry: HubRegistry,
    private readonly logger: Logger,
    private readonly options: ClusterHubsOptions,
  ) {
    this.me = bus.instanceId;
    registry.onLink((link, event) => {
      if (event === 'removed') void this.forget(link);
      // Only a new link counts against the cap; its hello (uuid) just updates its entry.
      else void this.put(link, event === 'added' ? options.maxLinksPerUser : 0);
    });
    bus.onMessage((m) => this.onMessage(m));
    bus.onUp((up) => up && void this.renew());
    this.renewTimer = setInterval(() => void this.renew(), Math.max(100, Math.floor(options.leaseMs / 3)));
    this.renewTimer.unref();
  }

  async list(userId: string): Promise<HubList> {
    const local = new Map<string, HubSummary>(this.registry.hubsOf(userId).map((h) => [this.field(h), { uuid: h.uuid, connectedAt: h.connectedAt }]));
    const partial = (): HubList => ({ hubs: sorted(local), partial: true });
    if (!this.bus.up) return partial();
    let timer: NodeJS.Timeout | undefined;
    try {
      // A Redis that accepts the command but stalls must not stall the page: a deadline, then the local list.
      const flat = await Promise.race([
        this.bus.scripts.shListHubs(hubsKey(userId)),
        new Promise<never>((_r, reject) => (timer = setTimeout(() => reject(new Error('Redis did not answer in time')), this.options.listTimeoutMs))),
      ]);
      const all = new Map(local);
      for (let i = 0; i + 1 < flat.length; i += 2) {
        const h = parseEntry(flat[i + 1]);
        if (h && !all.has(flat[i])) all.set(flat[i], h);
      }
      return { hubs: sorted(all), partial: false };
    } catch (e) {
      this.logger.debug({ err: (e as Error).message }, 'cluster: listing hubs from Redis failed');
      return partial();
    } finally {
      clearTimeout(timer);
    }
  }

  close(): void {
    clearInterval(this.renewTimer);
  }

  private field(link: BrokerLink): string {
    return `${this.me}.${link.seq}`;
  }

  private async put(link: BrokerLink, max: number): Promise<void> {
    if (!this.bus.up) return;
    try {
      const over = await this.bus.scripts.shPutHub(hubsKey(link.userId), this.field(link), link.connectedAt, link.uuid, this.options.leaseMs, max);
      if (Number(over) === 1) {
        this.logger.warn({ userId: link.userId }, 'cluster: a hub link beyond the account cap refused (its links elsewhere answer pings)');
        link.refused();
      }
    } catch (e) {
      // The renewal timer writes it once Redis is back.
      this.logger.debug({ err: (e as Error).message }, 'cluster: listing a hub link failed');
    }
  }

  private async forget(link: BrokerLink): Promise<void> {
    if (!this.bus.up) return;
    await this.bus.redis.hdel(hubsKey(link.userId), this.field(link)).catch(() => undefined);
  }

  private closeLink(userId: string, seq: number): void {
    this.registry
      .hubsOf(userId)
      .find((l) => l.seq === seq)
      ?.replaced();
  }

  private onMessage(m: BusMessage): void {
    // Sent by instances of an older version (which evicted the oldest link at the cap).
    if (m.t === 'drop') this.closeLink(m.userId, m.seq);
  }

  private async renew(): Promise<void> {
    if (!this.bus.up) return;
    const links = this.registry.all();
    // Batches keep one renewal round from building a giant pipeline with many thousands of links.
    for (let i = 0; i < links.length; i += 1000) {
      const p = this.bus.batch();
      // A link closed while an earlier batch was out is not written back (its entry is deleted).
      for (const l of links.slice(i, i + 1000))
        if (this.registry.hubsOf(l.userId).includes(l)) p.shPutHub(hubsKey(l.userId), this.field(l), l.connectedAt, l.uuid, this.options.leaseMs, 0);
      try {
        await p.exec();
      } catch (e) {
        this.logger.debug({ err: (e as Error).message }, 'cluster: renewing hub lists failed');
        return;
      }
    }
  }
}

/** `<expires>|<connected>|<uuid>` → the summary; undefined for anything else. */
function parseEntry(v: string): HubSummary | undefined {
  const m = /^\d+\|(\d+)\|(.*)$/s.exec(v);
  return m ? { connectedAt: Number(m[1]), uuid: m[2] } : undefined;
}

function sorted(m: Map<string, HubSummary>): HubSummary[] {
  return [...m.values()].sort((a, b) => a.connectedAt - b.connectedAt);
}
