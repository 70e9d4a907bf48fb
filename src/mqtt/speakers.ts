import type { DeviceRecord } from '../core/events';
import type { ExtensionContext } from '../extensions/extension';
import type { HubReadModel } from '../hub-client/read-model';
import type { WireEvent } from '../extensions/wire-events';
import type { DispatchResult } from '../operations/dispatch';
import { bridgeResponse, failed, objectPayload, succeeded } from './bridge';
import type { FriendlyNames } from './friendly-names';
import type { BrokerLink } from './broker-link';
import type { Topics } from './topics';
import { SerialQueues } from './serial';

/** How long a changed device name must stay before the speaker's topics follow it (ms). */
export const NAME_SETTLE_MS = 2000;

export interface SpeakerView {
  id: string;
  name: string;
  record: DeviceRecord;
}

/**
 * Per-speaker topics (zigbee2mqtt style): retained state and availability, `set` and `get`,
 * plus the bridge's device list and device events. What they say comes from the client
 * layer's read model (speakers, playback, mute, who announces; re-read after an overflow);
 * published on change only (time ticks too when mqtt.timeUpdates asks for them); everything
 * again after a reconnect.
 */
export class SpeakerTopics {
  private readonly order = new SerialQueues();
  private readonly published = new Map<string, string>();
  /** Speakers this bridge has published (a device event for another one is a join). */
  private readonly seen = new Set<string>();
  private listeners: (() => void)[] = [];
  /** The last announcement's outcome, published retained (and again after a reconnect). */
  private lastAnnouncement?: Record<string, unknown>;

  constructor(
    private readonly ctx: Pick<ExtensionContext, 'dispatch'>,
    private readonly link: Pick<BrokerLink, 'publish'>,
    private readonly topics: Topics,
    private readonly names: FriendlyNames,
    private readonly session: string,
    private readonly timeUpdates: boolean,
    private readonly model: HubReadModel,
  ) {
    for (const d of model.all()) this.seen.add(d.DeviceID);
    model.on('device', (d) => {
      this.publishSpeaker(this.view(d));
      this.publishDevices();
      this.publishParty();
      this.followName(d);
    });
    model.on('playback', (snapshot) => {
      // The zone's speakers before and after the change (a Stopped zone's event may list none).
      const key = snapshot.playbackId ?? '';
      for (const id of new Set([...(this.lastMembers.get(key) ?? []), ...snapshot.deviceIds])) this.publishById(id);
      if (snapshot.state === 'PlayerStateStopped') {
        if (snapshot.playbackId === undefined) for (const ids of this.lastMembers.values()) for (const id of ids) this.publishById(id);
        if (snapshot.playbackId === undefined) this.lastMembers.clear();
        else this.lastMembers.delete(key);
      } else this.lastMembers.set(key, snapshot.deviceIds);
      this.publishParty();
    });
    model.on('missing', (id) => {
      // Gone from the hub's list (removed, or gone while the events overflowed): a ghost now.
      this.seen.delete(id);
      this.publishDevices();
      this.publishGhosts();
      for (const l of this.listeners) l();
    });
    model.on('synced', (list) => {
      const joined = list.some((d) => !this.seen.has(d.DeviceID));
      for (const d of list) this.seen.add(d.DeviceID);
      if (joined) for (const l of this.listeners) l();
    });
  }

  /** Per speaker, the pending check of a changed name (one timer each, bounded by the speakers). */
  private readonly settling = new Map<string, NodeJS.Timeout>();
  private renameListeners: ((deviceId: string, from: string, to: string) => void)[] = [];

  /** Called after a speaker's topics moved to its new name (HA discovery re-creates its entities). */
  onRename(listener: (deviceId: string, from: string, to: string) => void): void {
    this.renameListeners.push(listener);
  }

  /**
   * A speaker whose device name no longer matches its topic name is renamed once the name has
   * settled (NAME_SETTLE_MS unchanged): a squeezelite is "Squeezebox 04:53" for the moment
   * before it tells its name, at every start; following that moment would move its topics (and
   * HA's entities) away and back each time.
   */
  private followName(d: DeviceRecord): void {
    const id = d.DeviceID;
    clearTimeout(this.settling.get(id));
    this.settling.delete(id);
    if (!this.names.differs(id, d.DeviceName)) return;
    const timer = setTimeout(() => {
      this.settling.delete(id);
      const now = this.model.device(id);
      if (!now) return;
      const r = this.names.follow(id, now.DeviceName);
      if (r.from !== undefined) this.renamed(now, r.from, r.name);
    }, NAME_SETTLE_MS);
    timer.unref();
    this.settling.set(id, timer);
  }

  /** Its topics move: the old retained ones are emptied, the new ones published, the move announced on the bridge. */
  private renamed(d: DeviceRecord, from: string, to: string): void {
    for (const topic of [this.topics.speaker(from), this.topics.availability(from)]) this.link.publish(topic, '', { qos: 1, retain: true });
    this.published.delete(`speaker:${d.DeviceID}`);
    this.published.delete(`availability:${d.DeviceID}`);
    this.publishSpeaker(this.view(d));
    this.publishDevices();
    this.link.publish(
      this.topics.event,
      JSON.stringify({ type: 'device_renamed', data: { from, to, friendly_name: to, device_id: d.DeviceID, name: d.DeviceName } }),
      { qos: 1 },
    );
    for (const l of this.renameListeners) l(d.DeviceID, from, to);
  }

  /** Told of every failed set or get (the error event entities): the speaker's topic name when it was one. */
  onError: (source: { command: string; speakers?: string[] }, result: DispatchResult) => void = () => undefined;

  /** Stops the pending name checks (the bridge stops). */
  close(): void {
    for (const t of this.settling.values()) clearTimeout(t);
    this.settling.clear();
  }

  /** Each zone's speakers as last published (to republish those that left it), by PlaybackID. */
  private readonly lastMembers = new Map<string, string[]>();

  list(): SpeakerView[] {
    return this.model.all().map((d) => this.view(d));
  }

  /** Called when the set of speakers or their names/availability changed (HA discovery listens). */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** After a (re)connect: every retained topic again (the broker may have lost them). */
  publishAll(): void {
    this.published.clear();
    this.publishDevices();
    for (const s of this.list()) this.publishSpeaker(s);
    this.publishParty();
    this.publishGhosts();
    if (this.lastAnnouncement) this.publishRetained(this.topics.announcement, 'announcement', this.lastAnnouncement);
  }

  /** Wire events, after the read model has applied them: the bridge's device events, the last announcement, time ticks. */
  event(e: WireEvent): void {
    switch (e.type) {
      case 'device': {
        const id = e.data.device.DeviceID;
        const known = this.seen.has(id);
        this.seen.add(id);
        const s = this.view(this.model.device(id) ?? e.data.device);
        const type = !known
          ? 'device_joined'
          : e.data.reason === 'DeviceAvailable'
            ? 'device_available'
            : e.data.reason === 'DeviceUnavailable'
              ? 'device_unavailable'
              : e.data.reason === 'DeviceError'
                ? 'device_error'
                : undefined;
        if (type)
          this.link.publish(
            this.topics.event,
            JSON.stringify({
              type,
              data: { friendly_name: s.name, device_id: s.id, name: s.record.DeviceName, ...(e.data.detail ? { detail: e.data.detail } : {}) },
            }),
            { qos: 1 },
          );
        if (!known || type === 'device_available' || type === 'device_unavailable') for (const l of this.listeners) l();
        break;
      }
      case 'announcement': {
        const done = e.data;
        this.lastAnnouncement = {
          announcement_id: done.announcementId,
          state: done.state,
          reason: done.reason ?? null,
          speakers: done.deviceIds.map((id) => this.nameOf(id)),
        };
        this.publishRetained(this.topics.announcement, 'announcement', this.lastAnnouncement);
        break;
      }
      case 'playbackTime':
        if (this.timeUpdates) for (const id of e.data.deviceIds) this.publishById(id);
        break;
      default:
        break;
    }
  }

  /** `<base>/<name>/get`: the state again (retained, so late subscribers have it too). */
  get(segment: string): void {
    const s = this.find(segment);
    if (!s) return this.answerUnknown(segment);
    this.published.delete(`speaker:${s.id}`);
    this.published.delete(`availability:${s.id}`);
    this.publishSpeaker(s);
  }

  /** `<base>/<name>/set`: volume, state, announce, play; a speaker's sets run in the order sent. */
  set(segment: string, payload: Buffer): Promise<void> | void {
    const s = this.find(segment);
    if (!s) return this.answerUnknown(segment, payload);
    return this.order.run(s.id, () => this.setNow(s, payload, segment));
  }

  private async setNow(s: SpeakerView, payload: Buffer, segment = s.name): Promise<void> {
    const parsed = objectPayload(payload);
    let transaction: unknown;
    let result: DispatchResult;
    if (!parsed.ok) result = parsed.result;
    else {
      transaction = parsed.value.transaction;
      result = await this.apply(s, parsed.value);
      // Wire events arrive on a later turn of the event loop: let those this set caused land
      // before the speaker's next set looks at the playback (an announce, then a stop).
      await new Promise((r) => setImmediate(r));
    }
    const answer = bridgeResponse(result, transaction);
    this.link.publish(this.topics.setResponse(s.name), JSON.stringify(answer), { qos: 1 });
    if (!result.ok) this.onError({ command: 'set', speakers: [s.name] }, result);
    // Sent to an old name (the speaker was renamed): answered there too, saying where it went.
    if (this.names.movedTo(segment) !== undefined)
      this.link.publish(this.topics.setResponse(segment), JSON.stringify({ ...answer, moved_to: this.topics.speaker(s.name) }), { qos: 1 });
  }

  private async apply(s: SpeakerView, cmd: Record<string, unknown>): Promise<DispatchResult> {
    const known = ['volume', 'mute', 'power', 'state', 'announce', 'play', 'priority', 'mode', 'duck_level', 'fade_ms', 'chime', 'transaction'];
    const unknown = Object.keys(cmd).find((k) => !known.includes(k));
    if (unknown)
      return failed(
        'InvalidParameter',
        `Unknown field ${JSON.stringify(unknown).slice(0, 60)}; a set takes volume, mute, power, state, announce, play (and priority; with announce: mode, duck_level, fade_ms, chime).`,
        unknown,
      );
    const announceOnly = (['mode', 'duck_level', 'fade_ms', 'chime'] as const).find((k) => k in cmd);
    if (announceOnly && !('announce' in cmd)) return failed('InvalidParameter', `${announceOnly} goes with announce.`, announceOnly);
    if (!['volume', 'mute', 'power', 'state', 'announce', 'play'].some((k) => k in cmd))
      return failed('InvalidParameter', 'Nothing to do; a set takes volume, mute, power, state, announce or play.');
    const base = { SessionToken: this.session };
    const priority = cmd.priority === undefined ? {} : { Priority: cmd.priority };
    let last: DispatchResult | undefined;
    const run = async (op: string, params: Record<string, unknown>): Promise<boolean> => {
      last = await this.ctx.dispatch(op, { ...base, ...params });
      return last.ok;
    };
    // With an announcement, volume is its level on this speaker, and the speaker's own level comes back afterwards.
    const announcing = 'announce' in cmd;
    if ('volume' in cmd && !announcing && !(await run('set_volume_device', { DeviceID: s.id, Volume: cmd.volume }))) return last!;
    // mute and power are the table's speaker commands: the same meaning as HomeKit's and the DLNA renderers'.
    if ('mute' in cmd && !(await run('set_mute_device', { DeviceID: s.id, Mute: cmd.mute }))) return last!;
    if ('power' in cmd && !(await run('set_speaker_power', { DeviceID: s.id, Power: cmd.power }))) return last!;
    if (announcing) {
      const level = 'volume' in cmd ? { Volume: cmd.volume } : {};
      // The announce operation's own parameters, validated (and their errors named) by it.
      const extra = {
        ...('mode' in cmd ? { Mode: cmd.mode } : {}),
        ...('duck_level' in cmd ? { DuckLevel: cmd.duck_level } : {}),
        ...('fade_ms' in cmd ? { FadeMs: cmd.fade_ms } : {}),
        ...('chime' in cmd ? { Chime: cmd.chime } : {}),
      };
      if (!(await run('announce', { Text: cmd.announce, DeviceIDList: s.id, ...level, ...priority, ...extra }))) return last!;
    }
    if ('play' in cmd) {
      const p = cmd.play;
      if (typeof p !== 'object' || p === null) return failed('InvalidParameter', 'play must be {"url": …} or {"persistent_id": …}.', 'play');
      const { url, persistent_id } = p as Record<string, unknown>;
      if (url !== undefined) {
        if (!(await run('play_web_media_selected_speakers', { MediaUrl: url, DeviceIDList: s.id, ...priority }))) return last!;
      } else if (persistent_id !== undefined) {
        if (!(await run('play_hub_media_selected_speakers', { PersistentID: persistent_id, DeviceIDList: s.id, ...priority }))) return last!;
      } else return failed('InvalidParameter', 'play must be {"url": …} or {"persistent_id": …}.', 'play');
    }
    if ('state' in cmd) {
      const r = await this.transport(s, cmd.state);
      if (!r.ok) return r;
      last = r;
    }
    // The last operation's answer (an announcement's carries its AnnouncementID).
    return last?.ok ? last : succeeded('stop_play');
  }

  /** Pause, resume and stop act on the playback (zone) this speaker is in; other rooms are left alone. */
  private async transport(s: SpeakerView, state: unknown): Promise<DispatchResult> {
    const zone = this.model.playbackOf(s.id);
    const inPlayback = zone.state !== 'PlayerStateStopped';
    const base = { SessionToken: this.session };
    switch (state) {
      case 'pause':
        if (!inPlayback || zone.state !== 'PlayerStatePlaying') return failed('NotPlaying', `${s.name} is not playing.`);
        return this.ctx.dispatch('pause_play', { ...base, DeviceID: s.id });
      case 'resume':
        if (!inPlayback || zone.state !== 'PlayerStatePaused' || !zone.persistentId)
          return failed('NotResumable', `${s.name} has no paused hub media to resume.`);
        return this.ctx.dispatch('resume_hub_media_selected_speakers', {
          ...base,
          PersistentID: zone.persistentId,
          DeviceIDList: zone.deviceIds.join(','),
        });
      case 'stop':
        if (!inPlayback) return succeeded('stop_play');
        // Alone, it stops its zone; with others, only this speaker leaves it (they play on).
        return zone.deviceIds.length === 1
          ? this.ctx.dispatch('stop_play', { ...base, DeviceID: s.id })
          : this.ctx.dispatch('set_speaker_power', { ...base, DeviceID: s.id, Power: 'off' });
      default:
        return failed('InvalidParameter', 'state must be "pause", "resume" or "stop".', 'state');
    }
  }

  /**
   * Speakers the hub had before (their names are kept) but does not list now: published
   * offline (retained), so Home Assistant shows them unavailable rather than stale.
   */
  publishGhosts(): void {
    for (const id of this.names.knownIds()) {
      if (this.model.device(id)) continue;
      const name = this.names.known(id)!;
      this.publishRetained(this.topics.availability(name), `availability:${id}`, { state: 'offline' });
    }
  }

  /**
   * Forgets a speaker the hub no longer lists (bridge/request/forget_speaker): its retained
   * topics are cleared and its name is free again. A listed speaker is refused.
   * `beforeClear` runs first (Home Assistant's discovery configs are removed there): were the
   * state topics emptied while HA still had the entities, HA would render every template of
   * them against an empty payload and log an error for each (issue 28, item 4).
   */
  forget(
    segment: string,
    beforeClear?: (deviceId: string) => void,
  ): { ok: true; deviceId: string; name: string } | { ok: false; result: DispatchResult } {
    const id = this.names.resolve(segment);
    if (!id)
      return {
        ok: false,
        result: failed('DeviceNotFound', `No speaker is named ${JSON.stringify(segment.slice(0, 60))} (friendly name or DeviceID).`, 'speaker'),
      };
    const name = this.names.known(id)!;
    if (this.model.device(id))
      return {
        ok: false,
        result: failed('InvalidParameter', `${name} is listed by the hub now; only a speaker that is gone can be forgotten.`, 'speaker'),
      };
    beforeClear?.(id);
    for (const topic of [this.topics.speaker(name), this.topics.availability(name)]) this.link.publish(topic, '', { qos: 1, retain: true });
    this.published.delete(`speaker:${id}`);
    this.published.delete(`availability:${id}`);
    this.names.forget(id);
    return { ok: true, deviceId: id, name };
  }

  private find(segment: string): SpeakerView | undefined {
    const id = this.names.resolve(segment);
    const d = id ? this.model.device(id) : undefined;
    return d ? this.view(d) : undefined;
  }

  private answerUnknown(segment: string, payload?: Buffer): void {
    const ghost = this.names.resolve(segment);
    if (ghost && payload) {
      // A speaker the hub had: the error goes where the sender waits for the answer (HA shows it).
      const parsed = objectPayload(payload);
      const transaction = parsed.ok ? parsed.value.transaction : undefined;
      const result = failed('DeviceUnavailable', `${this.names.known(ghost)} is not present: the hub does not list it now.`);
      this.link.publish(this.topics.setResponse(this.names.known(ghost)!), JSON.stringify(bridgeResponse(result, transaction)), { qos: 1 });
      this.onError({ command: 'set', speakers: [this.names.known(ghost)!] }, result);
    }
    const error = `No speaker is named ${JSON.stringify(segment.slice(0, 60))} (friendly name or DeviceID).`;
    // Reported on the bridge (the segment's own topics may belong to nobody).
    this.link.publish(this.topics.event, JSON.stringify({ type: 'error', data: { error, code: 'DeviceNotFound' } }), { qos: 1 });
    if (!ghost) this.onError({ command: payload ? 'set' : 'get' }, failed('DeviceNotFound', error));
  }

  /** A speaker as this bridge shows it: its record and its topic name (assigned on first sight, kept). */
  private view(record: DeviceRecord): SpeakerView {
    return { id: record.DeviceID, name: this.names.nameOf(record.DeviceID, record.DeviceName), record };
  }

  private nameOf(id: string): string {
    const d = this.model.device(id);
    return d ? this.view(d).name : (this.names.known(id) ?? id);
  }

  private publishById(id: string): void {
    const d = this.model.device(id);
    if (d) this.publishSpeaker(this.view(d));
  }

  private stateOf(s: SpeakerView): Record<string, unknown> {
    const p = this.model.playbackOf(s.id);
    const inIt = p.deviceIds.includes(s.id);
    const state = !inIt ? 'stopped' : p.state === 'PlayerStatePlaying' ? 'playing' : p.state === 'PlayerStatePaused' ? 'paused' : 'stopped';
    const media =
      state === 'stopped' || !p.kind
        ? null
        : {
            kind: p.kind,
            title: p.title ?? '',
            ...(p.persistentId ? { persistent_id: p.persistentId } : {}),
            // Hub media and TTS URLs carry the media server's secret: only web URLs are shown.
            ...(p.kind === 'web' && p.url ? { url: p.url } : {}),
          };
    const announcement = this.model.announcing(s.id);
    return {
      state: announcement ? 'announcing' : state,
      ...(announcement ? { announcement_id: announcement } : {}),
      volume: s.record.Volume,
      muted: this.model.muted(s.id),
      available: s.record.Active,
      media,
      time_elapsed: state === 'stopped' ? -1 : p.timeElapsed,
      device_id: s.id,
      name: s.record.DeviceName,
    };
  }

  /**
   * The zone that holds every available speaker (a party play, playing or paused), else
   * stopped: `bridge/party`, retained. The "Play on all speakers" select shows its hub media
   * and goes back to none when it stops (it kept the last title before: issue 28).
   */
  private publishParty(): void {
    const available = this.model.all().filter((d) => d.Active);
    const zone = available.length
      ? this.model.playbacks().find((p) => p.state !== 'PlayerStateStopped' && available.every((d) => p.deviceIds.includes(d.DeviceID)))
      : undefined;
    const media = zone?.kind
      ? { kind: zone.kind, title: zone.title ?? '', ...(zone.persistentId ? { persistent_id: zone.persistentId } : {}) }
      : null;
    const state = !zone ? 'stopped' : zone.state === 'PlayerStatePaused' ? 'paused' : 'playing';
    this.publishRetained(this.topics.party, 'party', { state, media });
  }

  private publishSpeaker(s: SpeakerView): void {
    this.publishRetained(this.topics.speaker(s.name), `speaker:${s.id}`, this.stateOf(s));
    this.publishRetained(this.topics.availability(s.name), `availability:${s.id}`, { state: s.record.Active ? 'online' : 'offline' });
  }

  private publishDevices(): void {
    const list = this.list().map((s) => ({
      friendly_name: s.name,
      device_id: s.id,
      name: s.record.DeviceName,
      model: s.record.ModelName,
      group_id: s.record.GroupID,
      ip_address: s.record.IPAddress,
      available: s.record.Active,
    }));
    this.publishRetained(this.topics.devices, 'devices', list);
  }

  /** Retained messages only when their content changed: no churn for subscribers or the broker. */
  private publishRetained(topic: string, key: string, value: unknown): void {
    const json = JSON.stringify(value);
    if (this.published.get(key) === json) return;
    this.published.set(key, json);
    this.link.publish(topic, json, { qos: 1, retain: true });
  }
}
