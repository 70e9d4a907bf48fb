import type { Clock } from '../../core/clock';
import type { SpeakerPlayState, SpeakerSnapshot } from '../driver';
import { parseTime } from '../../protocols/upnp/didl';
import type { RendererControl } from './renderer-control';
import type { RendererTransport } from './renderer-transport';
import type { RendererVolume } from './renderer-volume';

/**
 * What the renderer has now, read from it (GetMediaInfo, GetPositionInfo, GetTransportInfo,
 * GetVolume, GetMute), whoever loaded it: another control point's URI and metadata too.
 * The reads go out together (issue 30: an announcement waits for this snapshot, and five
 * round trips one after another cost five times one); they change nothing, so their order
 * does not matter, and the first that fails fails the snapshot as before.
 */
export async function readSnapshot(control: RendererControl, volume: RendererVolume, clock: Clock): Promise<SpeakerSnapshot> {
  const [media, pos, transport, level] = await Promise.all([
    control.avt('GetMediaInfo'),
    control.avt('GetPositionInfo'),
    control.readTransport(),
    volume.read(),
  ]);
  const state: SpeakerPlayState =
    transport.state === 'PLAYING' || transport.state === 'TRANSITIONING' ? 'playing' : transport.state === 'PAUSED_PLAYBACK' ? 'paused' : 'stopped';
  const url = media.CurrentURI || pos.TrackURI || undefined;
  return {
    state,
    url,
    metadata: media.CurrentURIMetaData && media.CurrentURIMetaData !== 'NOT_IMPLEMENTED' ? media.CurrentURIMetaData : undefined,
    position: parseTime(pos.RelTime),
    duration: parseTime(pos.TrackDuration) || undefined,
    volume: level.volume,
    muted: level.muted,
    takenAt: clock.now(),
    driver: { rawVolume: level.raw },
  };
}

/**
 * Puts a snapshot back: the renderer's own volume level and mute, then (unless volumeOnly)
 * its URI with the original metadata, played from the position it had, or paused there.
 */
export async function restoreSnapshot(
  snap: SpeakerSnapshot,
  parts: { volume: RendererVolume; transport: RendererTransport },
  options: { volumeOnly?: boolean } = {},
): Promise<void> {
  await parts.volume.restore(snap);
  if (options.volumeOnly || !snap.url) return;
  await parts.transport.restoreMedia({ ...snap, url: snap.url });
}
