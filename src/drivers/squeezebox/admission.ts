import type { Logger } from '../../logger';
import type { AllowList } from '../../net/allow-list';
import { KeyedBuckets } from '../../net/token-bucket';
import type { SqueezeboxConfig } from './config';
import { hubMs, type PlayerConnection } from './connection';
import { strm, type Helo } from './protocol';

/** How long an old connection has to answer `strm t` before a newcomer with its MAC replaces it. */
export const PROBE_MS = 1500;
/** Most players (MACs) the driver keeps: a client inventing MACs cannot grow the speaker list without end. */
export const MAX_PLAYERS = 256;
/** Most MACs remembered as claimed twice (one log line each). */
const MAX_CONTESTED = 1024;
/** After a MAC's holder answered a probe, newcomers with that MAC are refused without probing for this long. */
export const CONTESTED_BACKOFF_MS = 5000;

/** What admission needs of the driver: its players by MAC, and a way to forget one. */
export interface PlayerTable {
  readonly byMac: ReadonlyMap<string, { conn?: PlayerConnection; info(): { ipAddress?: string } }>;
  /** Drops an offline player from the table (speakerRemoved). */
  forget(mac: string): void;
  /** One rate-limited log line per kind of refusal. */
  refuse(kind: string, message: string, fields?: Record<string, unknown>): void;
}

/**
 * Who becomes a player, and who stays one (issue 32 item 7). SlimProto has no authentication:
 * a player is whoever says HELO with a MAC. So that a host on the LAN can neither take a real
 * player over, nor fill the table, nor lock players out:
 *
 * - squeezebox.allow limits the addresses served at all; connections are capped per address
 *   (maxConnectionsPerAddress) as well as in all;
 * - a HELO makes a player only once the connection answers `strm t` with a STAT within
 *   statTimeoutMs: a client that only says HELO never appears in the speaker list and is
 *   closed; a player that stops reporting for statTimeoutMs is closed too;
 * - new connections are rate-limited per address (newConnectionsPerSecond), refused at accept;
 * - a MAC claimed while its player's connection is alive: the old connection is asked for a
 *   STAT; if it answers, the newcomer is refused (and logged once per MAC: two players with
 *   one MAC, usually squeezelite's -m), and so is every newcomer with that MAC for
 *   CONTESTED_BACKOFF_MS without asking again; if it does not (a player back after a network blip,
 *   its old socket half-dead), the newcomer takes over. No ping-pong: the live one keeps it;
 * - new MACs are capped per address (maxPlayersPerAddress, offline ones count: they hold
 *   table slots); a full table forgets its longest-offline player to make room, and refuses
 *   only when every player is online.
 */
export class PlayerAdmission {
  private readonly perAddress = new Map<string, number>();
  private readonly offlineSince = new Map<string, number>();
  private readonly contested = new Set<string>();
  /** MAC → until when newcomers claiming it are refused without a probe (its holder answered one). */
  private readonly backoff = new Map<string, number>();
  /**
   * New connections per address (squeezebox.newConnectionsPerSecond, burst twice that). A player
   * connects once and reconnects every few seconds at most; a host opening thousands a second
   * is refused at accept, before a HELO is parsed or a live player probed.
   */
  private readonly connectRate: KeyedBuckets;

  constructor(
    private readonly config: SqueezeboxConfig,
    private readonly allow: AllowList,
    private readonly table: PlayerTable,
    private readonly log: Logger,
  ) {
    this.connectRate = new KeyedBuckets(config.newConnectionsPerSecond * 2, config.newConnectionsPerSecond, 1024);
  }

  /** Why a new connection from that address is refused (a kind, for the log's rate limit, and a message), or undefined: then it counts. */
  connect(peer: string, open: number): { kind: string; message: string } | undefined {
    if (!this.allow.allows(peer)) return { kind: 'allow', message: `connection from ${peer} refused: not in squeezebox.allow` };
    if (!this.connectRate.get(peer)?.take()) {
      return {
        kind: 'rate',
        message: `connection from ${peer} refused: more than ${this.config.newConnectionsPerSecond} new connections a second from that address (squeezebox.newConnectionsPerSecond)`,
      };
    }
    if (open >= this.config.maxConnections) {
      return { kind: 'limit', message: `connection refused: ${this.config.maxConnections} SlimProto connections are open already` };
    }
    const mine = this.perAddress.get(peer) ?? 0;
    if (mine >= this.config.maxConnectionsPerAddress) {
      const max = this.config.maxConnectionsPerAddress;
      return {
        kind: 'limit-address',
        message: `connection from ${peer} refused: ${max} SlimProto connections from that address are open already (squeezebox.maxConnectionsPerAddress)`,
      };
    }
    this.perAddress.set(peer, mine + 1);
    return undefined;
  }

  disconnected(peer: string): void {
    const n = (this.perAddress.get(peer) ?? 1) - 1;
    if (n <= 0) this.perAddress.delete(peer);
    else this.perAddress.set(peer, n);
  }

  /** A player's connection went: it is offline from now (for the longest-offline eviction). */
  offline(mac: string): void {
    this.offlineSince.set(mac, Date.now());
  }

  /** The player was forgotten (evicted or the driver stopped). */
  forgotten(mac: string): void {
    this.offlineSince.delete(mac);
  }

  /**
   * Whether the connection that said this HELO becomes the MAC's player. Resolves false (the
   * connection closed, the reason logged) when it does not report, its address has its
   * players, the table is full of online players, or the MAC's player is alive elsewhere.
   */
  async admit(conn: PlayerConnection, helo: Helo): Promise<boolean> {
    const peer = conn.remoteAddress;
    const reported = conn.nextStat(this.config.statTimeoutMs);
    conn.send(strm({ command: 't', value: Math.floor(hubMs()) >>> 0 }));
    if (!(await reported)) {
      if (!conn.isClosed)
        this.refuse(conn, 'silent', `HELO from ${peer} (${helo.mac}) dropped: no STAT within ${this.config.statTimeoutMs} ms`, { peer });
      return false;
    }
    const known = this.table.byMac.get(helo.mac);
    if (!known) {
      let mine = 0;
      for (const p of this.table.byMac.values()) if (p.info().ipAddress === peer) mine++;
      if (mine >= this.config.maxPlayersPerAddress) {
        return this.refuse(
          conn,
          'players-per-address',
          `player ${helo.mac} from ${peer} refused: ${mine} players from that address already (squeezebox.maxPlayersPerAddress)`,
          { peer },
        );
      }
      if (this.table.byMac.size >= MAX_PLAYERS && !this.evictOne()) {
        return this.refuse(conn, 'players', `player ${helo.mac} refused: ${MAX_PLAYERS} players are online already`, { peer });
      }
      return !conn.isClosed;
    }
    const old = known.conn;
    if (old && old !== conn && !old.isClosed) {
      const answered = old.nextStat(PROBE_MS);
      old.send(strm({ command: 't', value: Math.floor(hubMs()) >>> 0 }));
      if (await answered) {
        this.claimedTwice(helo.mac, peer, old.remoteAddress);
        return this.refuse(conn, 'mac-in-use', `player ${helo.mac} from ${peer} refused: that MAC's player at ${old.remoteAddress} is alive`, {
          peer,
        });
      }
      this.log.info(
        { mac: helo.mac, old: old.remoteAddress, peer },
        `squeezebox: player ${helo.mac} reconnected from ${peer}; its old connection did not answer and is closed`,
      );
    }
    return !conn.isClosed;
  }

  /** Closes connections of players silent for statTimeoutMs (they answer every keepalive). */
  closeSilent(): void {
    const now = hubMs();
    for (const p of this.table.byMac.values()) {
      const c = p.conn;
      if (c && !c.isClosed && c.lastStatAt !== undefined && now - c.lastStatAt > this.config.statTimeoutMs) {
        this.table.refuse('silent', `player ${c.helo?.mac} at ${c.remoteAddress} closed: no STAT for ${this.config.statTimeoutMs} ms`, {
          peer: c.remoteAddress,
        });
        c.close();
      }
    }
  }

  private refuse(conn: PlayerConnection, kind: string, message: string, fields: Record<string, unknown>): false {
    this.table.refuse(kind, message, fields);
    conn.close();
    return false;
  }

  /** Forgets the longest-offline player; false when every player is online. */
  private evictOne(): boolean {
    let oldest: string | undefined;
    let at = Infinity;
    for (const [mac, p] of this.table.byMac) {
      if (p.conn) continue;
      const since = this.offlineSince.get(mac) ?? 0;
      if (since < at) {
        at = since;
        oldest = mac;
      }
    }
    if (oldest === undefined) return false;
    this.log.info({ mac: oldest }, `squeezebox: player ${oldest} forgotten (offline the longest; the table of ${MAX_PLAYERS} players is full)`);
    this.table.forget(oldest);
    this.offlineSince.delete(oldest);
    return true;
  }

  /** One warning per MAC: two live connections claim it. */
  private claimedTwice(mac: string, peer: string, holder: string): void {
    if (this.contested.has(mac)) return;
    if (this.contested.size >= MAX_CONTESTED) this.contested.clear();
    this.contested.add(mac);
    this.log.warn(
      { mac, holder, claimant: peer },
      `squeezebox: MAC ${mac} is claimed by a second connection (from ${peer}) while its player at ${holder} is alive; the newcomer is refused. ` +
        'If these are two real players, give each its own MAC with squeezelite -m (squeezelite silently ignores an -m in 00:04:20:xx:xx:xx, the Logitech range, and uses its own)',
    );
  }
}
