import { HubError } from '../../core/errors';
import type { BrokerLink, LinkResult } from './hub-link';

export interface RegistryOptions {
  /** A request for a user whose hub dropped at most this long ago waits for it to come back… */
  recentlyOnlineMs: number;
  /** …for at most this long; otherwise (or then) HubOffline at once. */
  reconnectWaitMs: number;
  /** Bound on requests waiting for hubs to come back, all users together. */
  maxWaiting: number;
  /** Hub links one user may hold here; a further one is refused (one account cannot hold thousands). */
  maxLinksPerUser?: number;
}

/** Told when a user's first hub links here (true) and when their last one here goes (false). */
export type LinkChange = (userId: string, linked: boolean) => void;

/** Told of each link: linked here, its hub said its uuid, gone (the cluster's hub lists follow these). */
export type LinkEvent = (link: BrokerLink, event: 'added' | 'hello' | 'removed') => void;

/** Where a user's requests go: this instance's registry alone, or the cluster's relay. */
export interface HubRouter {
  request(userId: string, op: string, params: Record<string, string>): Promise<LinkResult>;
}

export function hubOffline(): LinkResult {
  return {
    ok: false,
    error: new HubError(
      'HubOffline',
      'None of your hubs is connected to the cloud. Start it with `speakerhub hub --cloud <url>` after `speakerhub account signin`.',
    ),
  };
}

/**
 * The connected hubs, by user. A user's requests go to their most recently connected hub;
 * nothing here can route a request to another user's hub (the key is the token's user).
 */
export class HubRegistry implements HubRouter {
  private readonly changes = new Set<LinkChange>();
  private readonly events = new Set<LinkEvent>();
  private readonly links = new Map<string, BrokerLink[]>();
  private readonly lastSeen = new Map<string, number>();
  private readonly waiting = new Map<string, Set<() => void>>();
  private waitingCount = 0;

  constructor(private readonly options: RegistryOptions) {}

  onChange(l: LinkChange): void {
    this.changes.add(l);
  }

  onLink(l: LinkEvent): void {
    this.events.add(l);
  }

  /** Whether the user holds their maximum of links here. */
  full(userId: string): boolean {
    return (this.links.get(userId)?.length ?? 0) >= (this.options.maxLinksPerUser ?? Infinity);
  }

  /**
   * Lists a new link; false (and nothing listed) when the user already holds their maximum:
   * the caller refuses it. Live links are never displaced by a newcomer (LinkServer first
   * replaces one that fails a liveness ping), so a stolen link token cannot push hubs out.
   */
  add(link: BrokerLink): boolean {
    if (this.full(link.userId)) return false;
    link.onHello = () => {
      for (const l of this.events) l(link, 'hello');
    };
    for (const l of this.events) l(link, 'added');
    const list = this.links.get(link.userId) ?? [];
    list.push(link);
    this.links.set(link.userId, list);
    if (list.length === 1) for (const l of this.changes) l(link.userId, true);
    const waiters = this.waiting.get(link.userId);
    if (waiters) for (const w of [...waiters]) w();
    return true;
  }

  /** Users with a hub linked here. */
  users(): IterableIterator<string> {
    return this.links.keys();
  }

  remove(link: BrokerLink): void {
    const list = this.links.get(link.userId);
    if (!list) return link.failAll();
    const i = list.indexOf(link);
    if (i < 0) return link.failAll();
    list.splice(i, 1);
    for (const l of this.events) l(link, 'removed');
    if (!list.length) {
      this.links.delete(link.userId);
      for (const l of this.changes) l(link.userId, false);
    }
    this.lastSeen.set(link.userId, Date.now());
    if (this.lastSeen.size > 100_000) this.lastSeen.delete(this.lastSeen.keys().next().value as string);
    link.failAll();
  }

  /** Closes the user's links opened with any link token but the one whose digest is `keep`; how many. */
  closeRevoked(userId: string, keep: string): number {
    const gone = this.hubsOf(userId).filter((l) => l.tokenDigest !== keep);
    for (const l of gone) l.revoked();
    return gone.length;
  }

  hubsOf(userId: string): readonly BrokerLink[] {
    return this.links.get(userId) ?? [];
  }

  get count(): number {
    let n = 0;
    for (const l of this.links.values()) n += l.length;
    return n;
  }

  all(): BrokerLink[] {
    return [...this.links.values()].flat();
  }

  /** Runs an operation on the user's hub; never hangs (HubOffline when none is connected). */
  async request(userId: string, op: string, params: Record<string, string>): Promise<LinkResult> {
    const link = this.current(userId) ?? (await this.waitForReconnect(userId));
    if (!link) return hubOffline();
    return link.request(op, params);
  }

  /** The user's most recently linked hub here, if any. */
  current(userId: string): BrokerLink | undefined {
    const list = this.links.get(userId);
    return list?.[list.length - 1];
  }

  /** A hub whose link just dropped is usually back within seconds: wait briefly for it. */
  private waitForReconnect(userId: string): Promise<BrokerLink | undefined> {
    const seen = this.lastSeen.get(userId);
    if (seen === undefined || Date.now() - seen > this.options.recentlyOnlineMs || this.waitingCount >= this.options.maxWaiting)
      return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const set = this.waiting.get(userId) ?? new Set();
      this.waiting.set(userId, set);
      this.waitingCount++;
      const done = () => {
        clearTimeout(timer);
        set.delete(done);
        if (!set.size) this.waiting.delete(userId);
        this.waitingCount--;
        resolve(this.current(userId));
      };
      const timer = setTimeout(done, this.options.reconnectWaitMs);
      set.add(done);
    });
  }
}

/** One of a user's linked hubs as the account page and API list it. */
export interface HubSummary {
  uuid: string;
  connectedAt: number;
}

/** A user's linked hubs; `partial` when only this instance's could be listed (the cluster was unreachable). */
export interface HubList {
  hubs: HubSummary[];
  partial: boolean;
}

/** Lists a user's linked hubs: this instance's registry alone, or (in a cluster) every instance's. */
export interface HubDirectory {
  list(userId: string): Promise<HubList>;
}

/** A single instance's directory: its registry holds every link there is. */
export function localHubs(registry: HubRegistry): HubDirectory {
  return {
    list: async (userId) => ({ hubs: registry.hubsOf(userId).map((h) => ({ uuid: h.uuid, connectedAt: h.connectedAt })), partial: false }),
  };
}
