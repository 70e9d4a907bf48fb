import { z } from 'zod';

/**
 * snapserver's view of its clients, groups and streams, kept current from Server.GetStatus,
 * notifications, and the answers to the hub's own requests (a connection is not notified
 * of its own changes).
 *
 * What snapserver sends is checked like any other input: a field of the wrong type is a
 * clear error (the driver then re-reads the whole status), never a crash further on. Only
 * the fields the driver uses are kept; fields a newer snapserver adds are dropped.
 */

export const RawVolumeSchema = z.object({ percent: z.number().min(0).max(100), muted: z.boolean() });

export const RawClientSchema = z.object({
  id: z.string().min(1),
  connected: z.boolean(),
  config: z.object({
    /** Set in a snapcast app (Client.SetName); '' until someone does. */
    name: z.string().default(''),
    volume: RawVolumeSchema,
    latency: z.number().optional(),
    instance: z.number().optional(),
  }),
  host: z
    .object({
      name: z.string().default(''),
      ip: z.string().default(''),
      mac: z.string().default(''),
      os: z.string().optional(),
      arch: z.string().optional(),
    })
    .default({ name: '', ip: '', mac: '' }),
  snapclient: z.object({ name: z.string().optional(), version: z.string().optional() }).optional(),
});

export const RawGroupSchema = z.object({
  id: z.string().min(1),
  name: z.string().default(''),
  stream_id: z.string(),
  muted: z.boolean().default(false),
  clients: z.array(RawClientSchema).default([]),
});

export const RawStreamSchema = z.object({
  id: z.string().min(1),
  status: z.string().default(''),
  uri: z.object({
    raw: z.string().default(''),
    scheme: z.string(),
    host: z.string().default(''),
    path: z.string().default(''),
    query: z.record(z.string(), z.string()).default({}),
  }),
});

export const RawServerSchema = z.object({
  groups: z.array(RawGroupSchema).default([]),
  streams: z.array(RawStreamSchema).default([]),
  server: z.object({ snapserver: z.object({ version: z.string().optional() }).optional() }).optional(),
});

export type RawVolume = z.output<typeof RawVolumeSchema>;
export type RawClient = z.output<typeof RawClientSchema>;
export type RawGroup = z.output<typeof RawGroupSchema>;
export type RawStream = z.output<typeof RawStreamSchema>;
export type RawServer = z.output<typeof RawServerSchema>;

/** The `{ server }` answer of Server.GetStatus and Group.SetClients, checked. */
export function readServerAnswer(result: unknown): RawServer {
  return z.object({ server: RawServerSchema }).parse(result).server;
}

/** The `{ volume }` answer of Client.SetVolume, checked. */
export function readVolumeAnswer(result: unknown): RawVolume {
  return z.object({ volume: RawVolumeSchema }).parse(result).volume;
}

/** The notifications the model follows, each with the params snapserver sends. */
const NotificationSchema = z.discriminatedUnion('method', [
  z.object({ method: z.literal('Server.OnUpdate'), params: z.object({ server: RawServerSchema }) }),
  z.object({ method: z.literal('Client.OnConnect'), params: z.object({ client: RawClientSchema }) }),
  z.object({ method: z.literal('Client.OnDisconnect'), params: z.object({ client: RawClientSchema }) }),
  z.object({ method: z.literal('Client.OnVolumeChanged'), params: z.object({ id: z.string(), volume: RawVolumeSchema.partial() }) }),
  z.object({ method: z.literal('Client.OnNameChanged'), params: z.object({ id: z.string(), name: z.string() }) }),
  z.object({ method: z.literal('Client.OnLatencyChanged'), params: z.object({ id: z.string(), latency: z.number() }) }),
  z.object({ method: z.literal('Group.OnStreamChanged'), params: z.object({ id: z.string(), stream_id: z.string() }) }),
  z.object({ method: z.literal('Group.OnNameChanged'), params: z.object({ id: z.string(), name: z.string() }) }),
  z.object({ method: z.literal('Stream.OnUpdate'), params: z.object({ id: z.string(), stream: RawStreamSchema }) }),
]);

export type Notification = z.output<typeof NotificationSchema>;

const FOLLOWED = new Set<string>(NotificationSchema.options.map((o) => o.shape.method.value));

/**
 * A notification the model follows, checked; undefined for one it ignores (Group.OnMute,
 * Stream.OnProperties, whatever a newer server sends). Throws on a followed one whose params
 * do not have the expected shape.
 */
export function parseNotification(method: string, params: unknown): Notification | undefined {
  if (!FOLLOWED.has(method)) return undefined;
  return NotificationSchema.parse({ method, params });
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

  /** Applies one checked notification (parseNotification). */
  applyNotification(n: Notification): ModelChange {
    const change = emptyChange();
    switch (n.method) {
      case 'Server.OnUpdate':
        return this.applyServer(n.params.server);
      case 'Client.OnConnect':
      case 'Client.OnDisconnect': {
        const c = n.params.client;
        if (!this.clients.has(c.id) || !this.groupOf(c.id)) change.unknown = true;
        this.clients.set(c.id, c);
        change.clients.add(c.id);
        break;
      }
      case 'Client.OnVolumeChanged': {
        const volume = n.params.volume;
        this.updateClient(n.params.id, change, (c) => (c.config.volume = { ...c.config.volume, ...volume }));
        break;
      }
      case 'Client.OnNameChanged': {
        const name = n.params.name;
        this.updateClient(n.params.id, change, (c) => (c.config.name = name));
        break;
      }
      case 'Client.OnLatencyChanged': {
        const latency = n.params.latency;
        this.updateClient(n.params.id, change, (c) => (c.config.latency = latency));
        break;
      }
      case 'Group.OnStreamChanged':
        this.setGroupStream(n.params.id, n.params.stream_id, change);
        break;
      case 'Group.OnNameChanged': {
        const g = this.groups.get(n.params.id);
        if (g) {
          g.name = n.params.name;
          for (const id of g.clientIds) change.placement.add(id);
        } else change.unknown = true;
        break;
      }
      case 'Stream.OnUpdate':
        this.streams.set(n.params.id, n.params.stream);
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
