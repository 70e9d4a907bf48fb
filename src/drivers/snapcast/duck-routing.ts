import type { Logger } from '../../logger';
import { mixPlacementDb, voiceGainDb } from '../../audio/duck-mix';
import { OverlayUnavailable, type MediaRequest, type OverlayHandle, type OverlayRequest } from '../driver';
import type { SnapcastSpeaker } from './client-speaker';
import { hubFedStreams, type ResolvedServerConfig } from './config';
import { duckOverlaySetup } from './duck-overlay';
import { parseSampleFormat } from './feeder';
import type { FeedSetup, HubStream } from './hub-stream';
import type { ServerModel } from './model';
import { streamSource } from './stream-source';
import type { ZonePool } from './zone-pool';

/** What the ducked-announcement routing needs of its server (SnapServer). */
export interface DuckHost {
  readonly log: Logger;
  readonly server: ResolvedServerConfig;
  readonly model: ServerModel;
  readonly pool: ZonePool;
  readonly overlayStream?: HubStream;
  /** Why announcements have no stream of their own here, or undefined when they have. */
  fallback(): string | undefined;
  speakers(): SnapcastSpeaker[];
  playPlain(list: SnapcastSpeaker[], media: MediaRequest, setup?: FeedSetup): Promise<PromiseSettledResult<void>[]>;
}

/**
 * The zone stream whose music the client hears now, if any. With an announcement stream, a
 * zone stream carrying an announcement (a second one at once, see SnapServer.overlayFor) is
 * no music to mix into.
 */
function musicOf(host: DuckHost, clientId: string): HubStream | undefined {
  const own = host.fallback() === undefined;
  return host.pool.streams.find((s) => !(own && s.playsOverlay) && s.listeners().includes(clientId));
}

/**
 * Whether an announcement for `targets` can be mixed in place for the client: it hears the
 * music on a client stream of its own (issue 30), or every client that hears it on the zone's
 * stream itself is a target.
 */
function mixesInPlace(music: HubStream, clientId: string, targets: ReadonlySet<string>): boolean {
  return music.routeOf(clientId) !== undefined || music.ownListeners().every((id) => targets.has(id));
}

/**
 * A ducked announcement as the driver's overlay (SpeakerDriver.overlay, issue 27): per zone,
 * when the targets are every client that hears that zone's music, it is mixed into the zone's
 * own feed (HubStream.duck): nobody changes stream or group, the music does not miss a sample,
 * and the clients stay in their zone. With client streams (issue 30) that holds per stream: a
 * target on a client stream of its own, or all of those on the zone's stream, get the mix on
 * their streams only, and the zone's other clients hear the music unchanged. Any other target is answered OverlayUnavailable: the
 * hub then takes it out of its zone for the announcement and plays it with
 * MediaRequest.duck (playDucked below), over a copy of the music.
 */
export async function overlayDucked(host: DuckHost, list: SnapcastSpeaker[], req: OverlayRequest): Promise<PromiseSettledResult<OverlayHandle>[]> {
  const targets = new Set(list.map((s) => s.clientId));
  const byStream = new Map<HubStream, SnapcastSpeaker[]>();
  const results = new Map<SnapcastSpeaker, PromiseSettledResult<OverlayHandle>>();
  for (const s of list) {
    const music = musicOf(host, s.clientId);
    if (music && mixesInPlace(music, s.clientId, targets)) byStream.set(music, [...(byStream.get(music) ?? []), s]);
    else {
      const why = music
        ? 'its music is shared with clients the announcement does not target, on a stream with no client stream of its own'
        : 'it hears no music of the hub here';
      results.set(s, { status: 'rejected', reason: new OverlayUnavailable(`Snapcast cannot mix in place: ${why}`) });
    }
  }
  const media: MediaRequest = { url: req.url, contentType: req.contentType, title: req.title, duration: req.duration, duck: req.duck };
  await Promise.all(
    [...byStream].map(async ([stream, mixed]) => {
      const r = await stream.duck(mixed, media, gainFor(mixed, media));
      r.forEach((x, i) => results.set(mixed[i], x));
    }),
  );
  return list.map((s) => results.get(s) ?? { status: 'rejected', reason: new Error('the announcement was not routed') });
}

/**
 * A ducked announcement played to clients the hub took out of their zones for it (the
 * overlay's fallback, see overlayDucked): when others hear the same music, the targets move to
 * the announcement stream, fed with the announcement mixed over a copy of the music (see
 * duck-overlay.ts), and the others keep the music unchanged; a snapclient changing streams
 * starts its buffer afresh, so the targets miss about a buffer's length of music at each move,
 * and the hub gives them back to their zone after. One announcement stream carries one such
 * mix: targets of a second shared zone hear that same mix. Targets with no music play it as an
 * overlay, as interrupt does. Without an announcement stream of the music's format it is an
 * interrupt (the core asked duckUnavailable first, so only when that changed in between), and
 * the log says why.
 */
export async function playDucked(host: DuckHost, list: SnapcastSpeaker[], media: MediaRequest): Promise<PromiseSettledResult<void>[]> {
  const plain: MediaRequest = { ...media, duck: undefined };
  const targets = new Set(list.map((s) => s.clientId));
  const mixed = list.filter((s) => musicOf(host, s.clientId));
  const music = mixed.length ? musicOf(host, mixed[0].clientId) : undefined;
  if (!music) return host.playPlain(list, plain);
  const others = music.listeners().filter((id) => !targets.has(id));
  const why = overlayDuckUnavailable(host, music);
  if (why) {
    host.log.warn(
      { clients: mixed.map((s) => s.clientId), others, reason: why },
      'the announcement cannot be mixed over the music: it interrupts it',
    );
    return host.playPlain(list, plain);
  }
  // Read once: the mix is placed on it, and the log says where.
  const musicLufs = music.musicLufs;
  const setup = duckOverlaySetup({
    tapMusic: (fn, replayMs) => music.tapMusic(fn, replayMs),
    format: music.feedFormat!,
    duck: media.duck!,
    voiceGainDb: gainFor(mixed, media),
    ...(musicLufs !== undefined ? { musicLufs } : {}),
    ...(media.duration !== undefined ? { voiceSeconds: media.duration } : {}),
  });
  host.log.info(
    {
      clients: mixed.map((s) => s.clientId),
      others,
      levelDb: media.duck!.levelDb,
      musicLufs: musicLufs !== undefined ? Number(musicLufs.toFixed(1)) : undefined,
      placementDb: Number(mixPlacementDb({ musicLufs, levelDb: media.duck!.levelDb }).toFixed(1)),
    },
    'announcement mixed over a copy of the music on the announcement stream (ducked)',
  );
  // Targets without music (or of another shared zone) hear the same mix: the music of the room next door, lowered, is no harm.
  return host.playPlain(list, { ...media, overlay: true }, setup);
}

/** One mix for every target of a stream: the voice's level against their average volume. */
function gainFor(mixed: SnapcastSpeaker[], media: MediaRequest): number {
  const volume = mixed.reduce((sum, s) => sum + s.volume, 0) / mixed.length;
  return voiceGainDb(media.duck!.voiceVolume, volume);
}

/**
 * Why an announcement cannot be mixed into what `s` plays now, announced together with
 * `targets` (DeviceIDs); undefined when it can (or when it plays nothing: the announcement
 * alone is all there is to hear).
 */
export function duckUnavailable(host: DuckHost, s: SnapcastSpeaker, targets: readonly string[]): string | undefined {
  const music = musicOf(host, s.clientId);
  if (music) {
    // On a client stream of its own: mixed in place there, whoever else hears the zone.
    if (music.routeOf(s.clientId) !== undefined) return undefined;
    const listeners = music.ownListeners();
    const wanted = new Set(targets);
    const others = host.speakers().filter((x) => listeners.includes(x.clientId) && !wanted.has(x.id));
    if (!others.length) return undefined;
    const why = overlayDuckUnavailable(host, music);
    if (!why) return undefined;
    return `its music is the same stream as that of ${others.map((x) => x.info().name).join(', ')}, which the announcement does not target, and ${why}`;
  }
  const g = host.model.groupOf(s.clientId);
  const own = hubFedStreams(host.server);
  if (g && !own.includes(g.streamId) && host.model.streams.get(g.streamId)?.status === 'playing') {
    return `it plays snapserver stream '${g.streamId}', which the hub does not feed, so it cannot mix into it`;
  }
  return undefined;
}

/** Why a ducked announcement cannot have a mix of `music` of its own on the announcement stream, or undefined. */
function overlayDuckUnavailable(host: DuckHost, music: HubStream): string | undefined {
  const fallback = host.fallback();
  if (!host.overlayStream || fallback !== undefined)
    return `snapserver has no announcement stream to give the announced clients a mix of their own (${fallback ?? 'none'})`;
  const f0 = music.feedFormat;
  if (!f0) return 'the music is not fed right now';
  let format: string;
  try {
    format = streamSource({ ...host.server, stream: host.server.announceStream, source: undefined }, host.model).format;
  } catch (e) {
    return `the announcement stream cannot be fed: ${(e as Error).message}`;
  }
  const f = parseSampleFormat(format);
  if (f.rate !== f0.rate || f.bits !== f0.bits || f.channels !== f0.channels)
    return `the announcement stream's sample format (${format}) is not the music's (${f0.rate}:${f0.bits}:${f0.channels}), so the music cannot be mixed into it`;
  return undefined;
}
