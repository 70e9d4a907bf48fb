import type { Logger } from '../logger';
import { LimitedLog } from '../logging/limited-log';
import { refusesClientUrl } from '../net/url-target';
import { PlayerCommand } from './api-proto';
import { PARTY, type EntityDef } from './entities';
import type { EsphomeHubPort } from './hub-port';

/** A MediaPlayerCommandRequest's fields (proto names). */
export interface PlayerCommandRequest {
  key: number;
  has_command: boolean;
  command: number;
  has_volume: boolean;
  volume: number;
  has_media_url: boolean;
  media_url: string;
  has_announcement: boolean;
  announcement: boolean;
}

/** ESPHome's volume_up / volume_down step (0.1 of the range): 5 of the hub's 0–50. */
const VOLUME_STEP = 5;
const MAX_URL = 4096;

/**
 * Runs one media_player command on the hub through its operations. The native API has no
 * answer to a command (the state that follows is the answer), so a refused one is logged
 * (rate-limited) and leaves the state as it was; Home Assistant shows that state.
 */
export class CommandRunner {
  private readonly refused: LimitedLog;

  constructor(
    private readonly hub: EsphomeHubPort,
    private readonly opts: { mode: 'interrupt' | 'duck'; allowLocalUrls: boolean },
    log: Logger,
  ) {
    this.refused = new LimitedLog(log, 'ESPHome media_player command refused');
  }

  /** `client`: the address of the connection that sent the command. */
  async run(entity: EntityDef, c: PlayerCommandRequest, client?: string): Promise<void> {
    try {
      await this.apply(entity, c, client);
    } catch (e) {
      const err = e as { code?: string; message?: string };
      this.refused.warn({ entity: entity.objectId, client, code: err.code ?? 'InternalError', err: err.message ?? String(e) });
    }
  }

  private async apply(entity: EntityDef, c: PlayerCommandRequest, client: string | undefined): Promise<void> {
    const party = entity.target === PARTY;
    const ids = party
      ? this.hub
          .speakers()
          .filter((s) => s.active)
          .map((s) => s.id)
      : [entity.target];
    if (c.has_media_url && c.media_url) {
      const url = c.media_url;
      if (url.length > MAX_URL || !/^https?:\/\//i.test(url))
        throw Object.assign(new Error('media_url must be an http(s) URL'), { code: 'InvalidMediaUrl' });
      // Issue 32: a LAN client may not make the hub fetch services on its own machine (see url-target.ts).
      if (!this.opts.allowLocalUrls && (await refusesClientUrl(url, client)))
        throw Object.assign(
          new Error('media_url points at the hub’s own machine (loopback, link-local or one of its addresses); esphome.allowLocalUrls allows it'),
          { code: 'LocalUrlRefused' },
        );
      if (c.has_announcement && c.announcement) await this.hub.announce(ids, url, { mode: this.opts.mode });
      else if (party) await this.hub.playParty(url);
      else await this.hub.playOn(ids, url);
    }
    if (c.has_volume && Number.isFinite(c.volume)) {
      const v = Math.round(Math.min(1, Math.max(0, c.volume)) * 50);
      if (party) await this.hub.setVolumeAll(v);
      else await this.hub.setVolume(entity.target, v);
    }
    if (c.has_command) await this.command(entity, ids, c.command);
  }

  private async command(entity: EntityDef, ids: string[], command: number): Promise<void> {
    const party = entity.target === PARTY;
    const zone = party ? this.hub.playback() : this.hub.playback(entity.target);
    switch (command) {
      case PlayerCommand.PLAY:
        return this.play(entity, zone);
      case PlayerCommand.PAUSE:
        if (zone.state !== 'PlayerStatePlaying') return;
        return this.hub.pause(zone.playbackId ? { playbackId: zone.playbackId } : { deviceId: ids[0] });
      case PlayerCommand.TOGGLE:
        if (zone.state === 'PlayerStatePlaying') return this.hub.pause(zone.playbackId ? { playbackId: zone.playbackId } : { deviceId: ids[0] });
        return this.play(entity, zone);
      case PlayerCommand.STOP:
        if (party) return zone.playbackId ? this.hub.stopPlay({ playbackId: zone.playbackId }) : undefined;
        return this.hub.stopPlay({ deviceId: entity.target });
      case PlayerCommand.MUTE:
      case PlayerCommand.UNMUTE:
        for (const id of ids) await this.hub.setMute(id, command === PlayerCommand.MUTE);
        return;
      case PlayerCommand.VOLUME_UP:
      case PlayerCommand.VOLUME_DOWN: {
        const step = command === PlayerCommand.VOLUME_UP ? VOLUME_STEP : -VOLUME_STEP;
        for (const id of ids) {
          const s = this.hub.speaker(id);
          if (s) await this.hub.setVolume(id, Math.min(50, Math.max(0, s.volume + step)));
        }
        return;
      }
      default:
        // Enqueue, repeat, clear playlist, turn on/off: a hub speaker has none of these; ignored as a device without them does.
        return;
    }
  }

  /** PLAY: resume paused hub media; otherwise play the speaker's last web URL again. */
  private async play(entity: EntityDef, zone: ReturnType<EsphomeHubPort['playback']>): Promise<void> {
    const party = entity.target === PARTY;
    if (zone.state === 'PlayerStatePlaying') return;
    if (zone.state === 'PlayerStatePaused' && zone.kind === 'hub' && zone.persistentId) {
      return this.hub.resume(zone.persistentId, party ? { party: true } : { deviceIds: zone.deviceIds.length ? zone.deviceIds : [entity.target] });
    }
    const url = zone.url ?? (party ? undefined : this.hub.lastUrlOf(entity.target));
    if (!url) return;
    if (party) await this.hub.playParty(url);
    else await this.hub.playOn([entity.target], url);
  }
}
