/**
 * snapserver's view of its clients, groups and streams, kept current from Server.GetStatus,
 * notifications, and the answers to the hub's own requests (a connection is not notified
 * of its own changes). Only the fields the driver uses are typed.
 */

export interface RawVolume {
  percent: number;
  muted: boolean;
}

export interface RawClient {
  id: string;
  connected: boolean;
  config: { name: string; volume: RawVolume; latency?: number; instance?: number };
  host: { name: string; ip: string; mac: string; os?: string; arch?: string };
  snapclient?: { name?: string; version?: string };
}

export interface RawGroup {
  id: string;
  name: string;
  stream_id: string;
  muted: boolean;
  clients: RawClient[];
}

export interface RawStream {
  id: string;
  status: string;
  uri: { raw: string; scheme: string; host: string; path: string; query: Record<string, string> };
}

export interface RawServer {
  groups: RawGroup[];
  streams: RawStream[];
  server?: { snapserver?: { version?: string } };
}

export interface GroupState {
  id: string;
  name: string;
  streamId: string;
  clientIds: string[];
}

/** What a model change means for the driver. */
export interface ModelChange {
  /** Clients whose own record changed (connection, volume, name, host) or that appeared. */
  clients: Set<string>;
  /** Clients whose group or group stream changed. */
  placement: Set<string>;
  /** Clients a full status no longer lists (deleted, or a restarted server that has not seen them yet). */
  removed: Set<string>;
  /** The server's client was seen that the model does not know: a full status is needed. */
  unknown: boolean;
}

const emptyChange = (): ModelChange => ({ clients: new Set(), placement: new Set(), removed: new Set(), unknown: false });

export class ServerModel {
  readonly clients = new Map<string, RawClient>();
  readonly groups = new Map<string, GroupState>();
  readonly streams = new Map<string, RawStream>();

  groupOf(clientId: string): GroupState | undefined {
    for (const g of this.groups.values()) if (g.clientIds.includes(clientId)) return g;
    return undefined;
  }

  /** Replaces everything with a full status (Server.GetStatus, Server.OnUpdate, Group.SetClients). */
  applyServer(server: RawServer): ModelChange {
    const change = emptyChange();
    const before = new Map([...this.clients.keys()].map((id) => [id, this.placementKey(id)]));
    const seen = new Set<string>();
    this.groups.clear();
    for (const g of server.groups ?? []) {
      this.groups.set(g.id, { id: g.id, name: g.name ?? '', streamId: g.stream_id, clientIds: (g.clients ?? []).map((c) => c.id) });
      for (const c of g.clients ?? []) {
        seen.add(c.id);
        const old = this.clients.get(c.id);
        if (!old || JSON.stringify(old) !== JSON.stringify(c)) change.clients.add(c.id);
        this.clients.set(c.id, c);
      }
    }
    for (const id of [...this.clients.keys()]) {
      if (!seen.has(id)) {
        this.clients.delete(id);
        change.removed.add(id);
      }
    }
    for (const id of seen) if (before.get(id) !== this.placementKey(id)) change.placement.add(id);
    this.streams.clear();
    for (const s of server.streams ?? []) this.streams.set(s.id, s);
    return change;
  }

  /** Applies one notification. Unknown methods (newer servers) change nothing. */
  applyNotification(method: string, params: any): ModelChange {
    const change = emptyChange();
    switch (method) {
      case 'Server.OnUpdate':
        return this.applyServer(params.server);
      case 'Client.OnConnect':
      case 'Client.OnDisconnect': {
        const c = params.client as RawClient;
        if (!this.clients.has(c.id) || !this.groupOf(c.id)) change.unknown = true;
        this.clients.set(c.id, c);
        change.clients.add(c.id);
        break;
      }
      case 'Client.OnVolumeChanged':
        this.updateClient(params.id, change, (c) => (c.config.volume = { ...c.config.volume, ...params.volume }));
        break;
      case 'Client.OnNameChanged':
        this.updateClient(params.id, change, (c) => (c.config.name = params.name));
        break;
      case 'Client.OnLatencyChanged':
        this.updateClient(params.id, change, (c) => (c.config.latency = params.latency));
        break;
      case 'Group.OnStreamChanged':
        this.setGroupStream(params.id, params.stream_id, change);
        break;
      case 'Group.OnNameChanged': {
        const g = this.groups.get(params.id);
        if (g) {
          g.name = params.name;
          for (const id of g.clientIds) change.placement.add(id);
        } else change.unknown = true;
        break;
      }
      case 'Stream.OnUpdate':
        if (params.stream) this.streams.set(params.id, params.stream);
        break;
      default:
        // Group.OnMute, Stream.OnProperties, …: nothing the hub shows.
        break;
    }
    return change;
  }

  setGroupStream(groupId: string, streamId: string, change: ModelChange = emptyChange()): ModelChange {
    const g = this.groups.get(groupId);
    if (!g) {
      change.unknown = true;
      return change;
    }
    if (g.streamId !== streamId) {
      g.streamId = streamId;
      for (const id of g.clientIds) change.placement.add(id);
    }
    return change;
  }

  setVolume(clientId: string, volume: Partial<RawVolume>): ModelChange {
    const change = emptyChange();
    this.updateClient(clientId, change, (c) => (c.config.volume = { ...c.config.volume, ...volume }));
    return change;
  }

  private updateClient(id: string, change: ModelChange, fn: (c: RawClient) => void): void {
    const c = this.clients.get(id);
    if (!c) {
      change.unknown = true;
      return;
    }
    fn(c);
    change.clients.add(id);
  }

  private placementKey(clientId: string): string {
    const g = this.groupOf(clientId);
    return g ? `${g.id}\u0000${g.streamId}\u0000${g.name}` : '';
  }
}
