import type { TimerHandle } from '../../core/clock';
import { DuckMixer } from '../../audio/duck-mix';
import { DuckVoice } from '../../audio/duck-voice';
import type { MediaRequest, OverlayEnd, OverlayHandle, StopReason } from '../driver';
import { type Feed, safeUrl } from './feeder';
import { HeldMusicStream } from './held-music';
import type { StreamMember } from './stream-core';

/** A ducked announcement mixed into the running feed (issue 21). */
interface Ducking {
  mixer: DuckMixer;
  voice: DuckVoice;
  /** The announced members (client ids) whose overlay still runs: the music goes on under it. */
  ids: Set<string>;
  /** Each announced member's handle: settled when its part of the overlay is over. */
  ends: Map<string, (end: OverlayEnd) => void>;
  /** After the mix is over: what was fed still plays out of snapserver's buffer before the members hear of the end. */
  ending?: TimerHandle;
  /** Whether the stream's own PCM carries the mix: every client that hears it there is announced (issue 30). */
  own: boolean;
  /** The announced clients that hear the music on a client stream of their own: theirs carry the mix. */
  routed: Set<string>;
}

/**
 * The ducking mode of a hub stream (issue 21, issue 27's overlays): an announcement mixed into
 * the running music for every client that hears it, who stay members of the stream (and of
 * their zone) the whole time; a new play meanwhile waits for the mix.
 */
export abstract class DuckingStream extends HeldMusicStream {
  /** The ducked announcement being mixed into the feed, if any. */
  protected ducking?: Ducking;
  /** Music played while a ducked announcement is mixed into the feed: it starts when that is over (deferPlay). */
  protected deferred?: { ready: StreamMember[]; media: MediaRequest; startAt: number; since: number };
  protected get isDucking(): boolean {
    return !!this.ducking || !!this.deferred;
  }

  /** Replaces whatever plays with a new decode (HubStream.start); a deferred play starts with it. */
  protected abstract start(ready: StreamMember[], media: MediaRequest, startAt: number): Promise<void>;

  protected override ownMixed(): boolean {
    return this.ducking?.own ?? true;
  }

  protected override mixedFor(clientId: string): boolean {
    return !!this.ducking?.routed.has(clientId);
  }

  /** A copy of the music's PCM as it goes to snapserver, while this feed runs; undefined when nothing is fed. */
  tapMusic(fn: (pcm: Buffer) => void, replayMs = 0): (() => void) | undefined {
    return this.feed?.running ? this.feed.tap(fn, replayMs) : undefined;
  }

  /** The running music's short-term loudness (LUFS; -Infinity for silence or under 400 ms of it); undefined when no music is fed. */
  get musicLufs(): number | undefined {
    return this.feed?.running ? this.meter?.lufs : undefined;
  }

  /** The running feed's sample format. */
  get feedFormat(): Feed['format'] | undefined {
    return this.feed?.running ? this.feed.format : undefined;
  }

  /** Client ids that hear this stream's music now (its playing members). */
  listeners(): string[] {
    if (!this.feed?.running) return [];
    return [...this.members.values()].filter((m) => m.state === 'playing').map((m) => m.clientId);
  }

  /**
   * Mixes an announcement into the running music for `list`, who are all its listeners, or
   * all those on the stream itself and/or some with a client stream of their own (the caller
   * checks: duck-routing.ts): the music fades down by the duck level, the voice plays over it,
   * the music fades back up, in the PCM on its way to snapserver, on the streams they hear. The decode goes on untouched
   * and nobody changes group, so the music neither stops nor loses its place, and the members
   * stay playing it. Resolves once the voice is decoding, with a handle per member whose end
   * settles when the mix is over and has played out of snapserver's buffer.
   */
  duck(list: StreamMember[], media: MediaRequest, voiceGainDb: number): Promise<PromiseSettledResult<OverlayHandle>[]> {
    return this.exclusive(async () => {
      try {
        const d = await this.startDuck(list, media, voiceGainDb);
        return list.map((m): PromiseSettledResult<OverlayHandle> => ({ status: 'fulfilled', value: this.handle(d, m.clientId) }));
      } catch (e) {
        return list.map((): PromiseSettledResult<OverlayHandle> => ({ status: 'rejected', reason: e }));
      }
    });
  }

  /** A member's part of a ducked mix: its end, and stop() (the last one stopping fades the music back up). */
  private handle(d: Ducking, clientId: string): OverlayHandle {
    const ended = new Promise<OverlayEnd>((resolve) => d.ends.set(clientId, resolve));
    return {
      ended,
      stop: async () => {
        if (this.ducking === d) this.unduck(clientId);
        else this.endOf(d, clientId, { reason: 'stopped' });
      },
    };
  }

  /** Settles one member's handle (once). */
  private endOf(d: Ducking, clientId: string, end: OverlayEnd): void {
    const resolve = d.ends.get(clientId);
    d.ends.delete(clientId);
    resolve?.(end);
  }

  private async startDuck(list: StreamMember[], media: MediaRequest, voiceGainDb: number): Promise<Ducking> {
    const feed = this.feed;
    const duck = media.duck;
    if (!duck) throw new Error('not a ducked announcement');
    if (!feed?.running) throw new Error('the music stopped before the announcement could be mixed into it');
    const prev = this.ducking;
    const mixer = new DuckMixer({
      format: feed.format,
      levelDb: duck.levelDb,
      fadeMs: duck.fadeMs,
      voiceGainDb,
      ...(this.meter ? { musicLufs: this.meter.lufs } : {}),
      // Taking over from a duck still under way: the music goes on from where its fade is.
      startGain: prev?.mixer.gain ?? 1,
    });
    const voice = new DuckVoice({
      url: media.url,
      format: feed.format,
      ffmpegPath: this.opts.ffmpegPath,
      startTimeoutMs: this.opts.startTimeoutMs,
      logger: this.log,
      ...(media.contentType ? { contentType: media.contentType } : {}),
      clip: true,
    });
    await voice.start(mixer);
    if (this.feed !== feed || !feed.running) {
      voice.stop();
      throw new Error('the music stopped before the announcement could be mixed into it');
    }
    if (prev) {
      prev.voice.stop();
      prev.ending?.cancel();
      for (const id of [...prev.ends.keys()]) this.endOf(prev, id, { reason: 'stopped', detail: 'another announcement took over the mix' });
    }
    const ids = new Set(list.map((m) => m.clientId));
    const routed = new Set([...ids].filter((id) => this.routeOf(id) !== undefined));
    // Without announced clients on client streams it is the stream's own mix, as it always was
    // (a client that joined since the caller checked hears it too); with them, the stream's
    // own PCM carries it only when every client still on it is announced.
    const own = !routed.size || this.ownListeners().every((id) => ids.has(id));
    const d: Ducking = { mixer, voice, ids, ends: new Map(), own, routed };
    this.mixInto(feed, d);
    this.log.info(
      {
        url: safeUrl(media.url),
        clients: [...d.ids],
        ...(d.routed.size ? { clientStreams: [...d.routed].map((id) => this.routeOf(id)), zoneStream: d.own } : {}),
        levelDb: duck.levelDb,
        fadeMs: duck.fadeMs,
        voiceGainDb: Number(voiceGainDb.toFixed(1)),
        musicLufs: this.meter ? Number(this.meter.lufs.toFixed(1)) : undefined,
        placementDb: Number(mixer.placementDb.toFixed(1)),
      },
      'announcement mixed into the music (ducked)',
    );
    return d;
  }

  /** Runs `feed`'s PCM through the duck's mixer until the mix is over (then, once it has played out of snapserver's buffer, duckOver). */
  private mixInto(feed: Feed, d: Ducking): void {
    this.ducking = d;
    d.mixer.onDone = () => {
      if (this.ducking !== d) return;
      feed.setMix(undefined);
      d.ending = this.opts.clock.setTimer(() => {
        d.ending = undefined;
        this.exclusive(async () => this.duckOver(d)).catch((e) => this.log.warn({ err: String(e) }, 'could not end the ducked announcement'));
      }, this.opts.server.bufferMs);
    };
    feed.setMix((pcm) => d.mixer.process(pcm));
  }

  /**
   * New music played (on clients of this server the announcement did not take) while a ducked
   * announcement is mixed into the music: one stream carries one feed, so starting it now
   * would cut the voice short, and mixing the voice into it would play the announcement to
   * clients it was not for. So the play waits until the announcement is over, as music played
   * during an interrupting announcement does (holdPlay): its clients are playing for the hub,
   * silently, and it starts where it would be by then.
   */
  protected deferPlay(ready: StreamMember[], media: MediaRequest, startAt: number): void {
    const prev = this.deferred;
    const wanted = new Set(ready.map((m) => m.clientId));
    if (prev) for (const m of prev.ready) if (!wanted.has(m.clientId) && m.state !== 'stopped') m.changeState('stopped', 'stopped');
    this.deferred = { ready, media, startAt, since: this.opts.clock.now() };
    for (const m of ready) m.changeState('playing');
    this.log.info(
      { url: safeUrl(media.url), clients: [...wanted] },
      'a ducked announcement is mixed into the music: the new music starts when it is over',
    );
  }

  /** Every client waiting for a deferred play stops (shutdown, lost connection). */
  protected dropDeferred(reason: StopReason, detail?: string): void {
    const p = this.deferred;
    this.deferred = undefined;
    for (const m of p?.ready ?? []) if (m.state !== 'stopped') m.changeState('stopped', reason, detail);
  }

  /** A client waiting for a deferred play leaves it (stopped, gone). */
  protected undefer(clientId: string): void {
    const p = this.deferred;
    if (!p) return;
    p.ready = p.ready.filter((m) => m.clientId !== clientId);
    if (!p.ready.length) this.deferred = undefined;
  }

  /** The ducked announcement is over (or the music it was mixed into is gone): a play that waited for it starts now. */
  private scheduleDeferred(): void {
    const p = this.deferred;
    if (!p) return;
    this.deferred = undefined;
    this.exclusive(async () => {
      const ready = p.ready.filter((m) => m.available && m.state === 'playing');
      if (!ready.length) return;
      const at = p.startAt + (this.opts.clock.now() - p.since) / 1000;
      try {
        await this.start(ready, p.media, p.media.duration !== undefined ? Math.min(at, p.media.duration) : at);
      } catch (e) {
        for (const m of ready) if (m.state !== 'stopped') m.changeState('stopped', 'error', String(e));
        throw e;
      }
    }).catch((e) => this.log.warn({ err: String(e) }, 'the music played during a ducked announcement could not start'));
  }

  /** The ducked announcement has played out: its members, who never stopped playing the music, are done with it. */
  private duckOver(d: Ducking): void {
    if (this.ducking !== d) return;
    this.ducking = undefined;
    d.voice.stop();
    for (const id of [...d.ends.keys()]) this.endOf(d, id, { reason: 'ended' });
    this.log.info({ clients: [...d.ids] }, 'ducked announcement over; the music is back at full level');
    this.scheduleDeferred();
  }

  /** A member leaves the ducked announcement (stopped, gone, or its handle stopped); with the last one, the music fades back up. */
  protected unduck(clientId: string): void {
    const d = this.ducking;
    if (!d) return;
    this.endOf(d, clientId, { reason: 'stopped' });
    if (!d.ids.delete(clientId) || d.ids.size) return;
    d.voice.stop();
    d.mixer.release();
  }

  /** The feed is gone: no mix (its members' overlays end with it). */
  protected endDuck(): void {
    const d = this.ducking;
    this.ducking = undefined;
    this.scheduleDeferred();
    if (d) {
      d.voice.stop();
      d.ending?.cancel();
      for (const id of [...d.ends.keys()]) this.endOf(d, id, { reason: 'stopped', detail: 'the music it was mixed into stopped' });
    }
  }
}
