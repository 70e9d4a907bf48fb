import type { Logger } from '../../logger';
import { hubFedStreams, type ResolvedServerConfig } from './config';
import { readServerAnswer, type GroupState, type ModelChange, type ServerModel } from './model';

/** The part of the control connection grouping uses. */
export interface ControlChannel {
  readonly connected: boolean;
  request<T = unknown>(method: string, params?: Record<string, unknown>): Promise<T>;
}

export interface GroupingOptions {
  server: ResolvedServerConfig;
  control: ControlChannel;
  model: ServerModel;
  /** Called with what the hub's own requests changed (snapserver does not notify their sender). */
  applied: (change: ModelChange) => void;
  logger: Logger;
}

/**
 * Arranges snapserver's groups for the hub. Invariant after every apply(): the only group
 * on the hub stream holds exactly the listening clients, which is what makes them play
 * sample-synchronously and keeps everyone else from hearing the hub. Any other group found
 * on the hub stream (clients the hub released, clients snapserver split off a group, new
 * clients that landed there because it was the default stream) is moved to the stream it
 * had before the hub took it, else the idle stream. Groups of the user's are not split
 * up: wanted clients are taken out of them, the rest stay together.
 *
 * Parked clients (music held back while an announcement has the hub stream, see HubStream)
 * leave it for the idle stream, not for their own: they are to hear nothing for a while, not
 * whatever their own stream plays, and they come back to the hub stream afterwards.
 */
export class Grouping {
  /** The stream each client's group had before the hub took it. */
  private readonly previousStream = new Map<string, string>();
  /** Clients the hub put alone on a client stream (issue 30), and which one. */
  private readonly routedOn = new Map<string, string>();
  /** Parked clients and the stream they were parked on (their previousStream entry stays). */
  private readonly parkedOn = new Map<string, string>();
  private warnedNoIdle = false;
  private readonly log: Logger;

  constructor(private readonly opts: GroupingOptions) {
    this.log = opts.logger;
  }

  private get streamId(): string {
    return this.opts.server.stream;
  }

  /**
   * Puts exactly `listening` (client ids) in one group on the hub stream and everyone else
   * off it; groups made only of `parked` clients go to the idle stream. Listening clients
   * `routes` gives a client stream (ClientStreamPool) go alone into a group on it instead, and
   * a client the hub had put on one goes back where it was when it is routed there no more.
   */
  async apply(all: string[], parked: ReadonlySet<string> = new Set(), routes: ReadonlyMap<string, string> = new Map()): Promise<void> {
    const { control, model } = this.opts;
    if (!control.connected) return;
    const hub = this.streamId;
    const routed = all.filter((id) => routes.has(id));
    const listening = all.filter((id) => !routes.has(id));
    for (const id of routed) await this.route(id, routes.get(id)!);
    let target: GroupState | undefined;
    if (listening.length) {
      const want = new Set(listening);
      for (const id of want) this.rememberStream(id);
      target = this.pickGroup(want);
      if (!target || target.clientIds.some((id) => parked.has(id))) {
        // Every wanted client shares a group with clients the play does not target (or the
        // group holds clients to park). Take the wanted ones out (snapserver gives each a
        // group of its own) rather than splitting the others up: their group stays as it was.
        const mixed = this.mostWanted(want);
        const keep = mixed.clientIds.filter((id) => !want.has(id));
        const res = readServerAnswer(await control.request('Group.SetClients', { id: mixed.id, clients: keep }));
        this.opts.applied(model.applyServer(res));
        target = this.pickGroup(want);
        if (!target) throw new Error('snapserver did not split the group as asked');
      }
      const have = new Set(target.clientIds);
      if (have.size !== want.size || [...want].some((id) => !have.has(id))) {
        // Pulls the other wanted clients in; on the hub's own group, also drops the ones
        // that are no longer wanted (they get groups of their own, released below).
        const res = readServerAnswer(await control.request('Group.SetClients', { id: target.id, clients: listening }));
        this.opts.applied(model.applyServer(res));
        target = model.groupOf(listening[0]);
        if (!target) throw new Error('Group.SetClients did not leave the clients in one group');
      }
      if (target.streamId !== hub) {
        await control.request('Group.SetStream', { id: target.id, stream_id: hub });
        this.opts.applied(model.setGroupStream(target.id, hub));
      }
    }
    for (const g of [...model.groups.values()]) {
      if (g.streamId !== hub || g.id === target?.id) continue;
      const park = g.clientIds.length > 0 && g.clientIds.every((id) => parked.has(id));
      const to = park ? this.idleStream() : this.releaseStream(g);
      if (!to) {
        if (!this.warnedNoIdle) {
          this.warnedNoIdle = true;
          this.log.error(
            { group: g.id, clients: g.clientIds },
            `snapserver has no stream besides '${hub}' to move idle clients to: they would hear the hub's audio. Declare an idle source in snapserver.conf`,
          );
        }
        continue;
      }
      await control.request('Group.SetStream', { id: g.id, stream_id: to });
      this.opts.applied(model.setGroupStream(g.id, to));
      if (park) {
        for (const id of g.clientIds) this.parkedOn.set(id, to);
        this.log.debug({ group: g.id, clients: g.clientIds, stream: to }, 'parked group');
        continue;
      }
      for (const id of g.clientIds) {
        this.previousStream.delete(id);
        this.parkedOn.delete(id);
      }
      this.log.debug({ group: g.id, clients: g.clientIds, stream: to }, 'released group');
    }
    await this.unroute(new Set(routed), parked);
    await this.unpark(parked);
  }

  /** Puts the client alone in a group on its client stream (taken out of its group, which stays as it is). */
  private async route(clientId: string, stream: string): Promise<void> {
    const { control, model } = this.opts;
    this.rememberStream(clientId);
    let g = model.groupOf(clientId);
    if (!g) return;
    if (g.clientIds.length > 1) {
      const res = readServerAnswer(await control.request('Group.SetClients', { id: g.id, clients: g.clientIds.filter((id) => id !== clientId) }));
      this.opts.applied(model.applyServer(res));
      g = model.groupOf(clientId);
      if (!g) throw new Error('snapserver did not give the client a group of its own');
    }
    this.routedOn.set(clientId, stream);
    if (g.streamId === stream) return;
    await control.request('Group.SetStream', { id: g.id, stream_id: stream });
    this.opts.applied(model.setGroupStream(g.id, stream));
    this.log.debug({ group: g.id, clientId, stream }, 'client on a client stream of its own');
  }

  /**
   * Clients on a client stream that are routed there no more (left the zone, paused alone, on
   * another one now): released like a group of the hub stream, or parked, when still there.
   */
  private async unroute(keep: ReadonlySet<string>, parked: ReadonlySet<string>): Promise<void> {
    const { control, model } = this.opts;
    for (const [id, on] of [...this.routedOn]) {
      if (keep.has(id)) continue;
      this.routedOn.delete(id);
      const g = model.groupOf(id);
      // Back on the hub stream (pulled in above), gone, or moved on by someone else.
      if (!g || g.streamId !== on) continue;
      const park = g.clientIds.every((c) => parked.has(c));
      const to = park ? this.idleStream() : this.releaseStream(g);
      if (!to) continue;
      await control.request('Group.SetStream', { id: g.id, stream_id: to });
      this.opts.applied(model.setGroupStream(g.id, to));
      for (const c of g.clientIds) {
        if (park) this.parkedOn.set(c, to);
        else {
          this.previousStream.delete(c);
          this.parkedOn.delete(c);
        }
      }
      this.log.debug({ group: g.id, clients: g.clientIds, stream: to }, park ? 'parked group' : 'released group from its client stream');
    }
  }

  /**
   * Clients parked earlier that are parked no more without coming back to the hub stream
   * (stopped while the music was held): released like any other, to the stream they had
   * before the hub took them, when their group is still where the hub parked it.
   */
  private async unpark(parked: ReadonlySet<string>): Promise<void> {
    const { control, model } = this.opts;
    for (const [id, on] of [...this.parkedOn]) {
      if (parked.has(id) || !this.parkedOn.has(id)) continue;
      const g = model.groupOf(id);
      if (g?.streamId === this.streamId) continue;
      // Its group-mates still parked: it goes back with them, later.
      if (g?.clientIds.some((c) => parked.has(c))) continue;
      const mates = g ? g.clientIds.filter((c) => this.parkedOn.has(c)) : [id];
      const prev = this.previousStream.get(id);
      for (const c of mates) {
        this.parkedOn.delete(c);
        this.previousStream.delete(c);
      }
      // Gone, moved on by someone else, or sharing its group with clients not the hub's: left where it is.
      if (!g || g.streamId !== on || mates.length !== g.clientIds.length) continue;
      if (!this.usable(prev) || prev === g.streamId) continue;
      await control.request('Group.SetStream', { id: g.id, stream_id: prev });
      this.opts.applied(model.setGroupStream(g.id, prev));
      this.log.debug({ group: g.id, clients: g.clientIds, stream: prev }, 'released parked group');
    }
  }

  /**
   * The group to play in: one holding exactly the wanted clients; else the hub's own group
   * (on the hub stream) holding most of them, whose other clients the hub may drop; else
   * the largest group made only of wanted clients. Undefined when every wanted client sits
   * in a group with clients of someone else's.
   */
  private pickGroup(want: Set<string>): GroupState | undefined {
    const groups = [...this.opts.model.groups.values()];
    const wanted = (g: GroupState) => g.clientIds.filter((id) => want.has(id)).length;
    const exact = groups.find((g) => g.clientIds.length === want.size && wanted(g) === want.size);
    if (exact) return exact;
    const own = groups.filter((g) => g.streamId === this.streamId && wanted(g) > 0).sort((a, b) => wanted(b) - wanted(a))[0];
    if (own) return own;
    return groups.filter((g) => g.clientIds.length > 0 && wanted(g) === g.clientIds.length).sort((a, b) => wanted(b) - wanted(a))[0];
  }

  private mostWanted(want: Set<string>): GroupState {
    const wanted = (g: GroupState) => g.clientIds.filter((id) => want.has(id)).length;
    const best = [...this.opts.model.groups.values()].sort((a, b) => wanted(b) - wanted(a))[0];
    if (!best || wanted(best) === 0) throw new Error('snapserver lists none of the target clients in a group');
    return best;
  }

  private rememberStream(clientId: string): void {
    const g = this.opts.model.groupOf(clientId);
    // On its client stream (issue 30) it is still the hub's: where it was before stays remembered.
    if (!g || g.streamId === this.streamId || this.opts.server.clientStreams.includes(g.streamId)) return;
    const parkedOn = this.parkedOn.get(clientId);
    this.parkedOn.delete(clientId);
    // Back from where the hub parked it: the stream remembered before is still its own.
    if (parkedOn === g.streamId && this.previousStream.has(clientId)) return;
    this.previousStream.set(clientId, g.streamId);
  }

  private releaseStream(g: GroupState): string | undefined {
    for (const id of g.clientIds) {
      const prev = this.previousStream.get(id);
      if (this.usable(prev)) return prev;
    }
    return this.idleStream();
  }

  /** The configured idle stream, else the first stream that is none of the hub's own. */
  private idleStream(): string | undefined {
    const { model, server } = this.opts;
    if (this.usable(server.idleStream)) return server.idleStream;
    return [...model.streams.keys()].find((id) => this.usable(id));
  }

  /** A declared stream the hub does not feed itself (neither the music's, any zone's, a client's, nor the announcements'). */
  private usable(id: string | undefined): id is string {
    const { model, server } = this.opts;
    return !!id && !hubFedStreams(server).includes(id) && model.streams.has(id);
  }
}
