import { HubCommandError } from './hub-port';
import { UpnpError } from '../protocols/upnp/soap';
import { escapeXml } from '../protocols/upnp/xml';

/** What a published renderer says of itself and maps: its protocols, evented variables, volume scale, errors and LastChange. */

/** The audio types the hub's speakers take (GetProtocolInfo): the hub transcodes for those that need it. */
export const SINK_PROTOCOLS = [
  'audio/mpeg',
  'audio/mp4',
  'audio/aac',
  'audio/x-aac',
  'audio/flac',
  'audio/x-flac',
  'audio/wav',
  'audio/x-wav',
  'audio/L16;rate=44100;channels=2',
  'audio/ogg',
  'audio/x-ms-wma',
  'audio/aiff',
  'audio/x-aiff',
  'audio/mpegurl',
  'audio/x-mpegurl',
]
  .map((mime) => `http-get:*:${mime}:*`)
  .join(',');

/** Evented AVTransport variables, in LastChange order. */
export const AVT_EVENTED = [
  'TransportState',
  'TransportStatus',
  'PlaybackStorageMedium',
  'CurrentPlayMode',
  'TransportPlaySpeed',
  'NumberOfTracks',
  'CurrentTrack',
  'CurrentTrackDuration',
  'CurrentMediaDuration',
  'CurrentTrackURI',
  'CurrentTrackMetaData',
  'AVTransportURI',
  'AVTransportURIMetaData',
  'NextAVTransportURI',
  'NextAVTransportURIMetaData',
  'CurrentTransportActions',
] as const;

/** UPnP's 0–100 onto the hub's 0–50, and back (round trips stay put). */
/** SetVolume's DesiredVolume: 0–100, or ArgumentValueOutOfRange. */
export function desiredVolume(desired: string): number {
  if (!/^\d{1,3}$/.test(desired.trim()) || Number(desired) > 100) throw new UpnpError('ArgumentValueOutOfRange', 'Volume is 0–100');
  return Number(desired);
}

/** SetMute's DesiredMute: 0/1 (true/false, yes/no as some control points send), or InvalidArgs. */
export function desiredMute(desired: string): boolean {
  const d = desired.trim().toLowerCase();
  if (!['0', '1', 'true', 'false', 'yes', 'no'].includes(d)) throw new UpnpError('InvalidArgs', 'DesiredMute is 0 or 1');
  return d === '1' || d === 'true' || d === 'yes';
}

export function toHubVolume(v: number): number {
  return Math.max(0, Math.min(50, Math.round(v / 2)));
}
export function toUpnpVolume(v: number): number {
  return Math.max(0, Math.min(100, v * 2));
}

/** The longest URI a renderer takes: the hub's own MediaUrl bound. */
export const MAX_URI_LENGTH = 4096;

/**
 * Refuses at SetAVTransportURI what the hub would refuse at Play: too long, control characters
 * (the URL parser drops CR, LF and tabs silently, so they are checked first), not a URL, or a
 * scheme the hub does not play.
 */
export function checkUrl(url: string): void {
  if (url.length > MAX_URI_LENGTH) throw new UpnpError('InvalidArgs', `the URI is longer than ${MAX_URI_LENGTH} characters`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(url)) throw new UpnpError('InvalidArgs', 'the URI holds control characters');
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new UpnpError('ResourceNotFound', 'not a URL');
  }
  if (!['http:', 'https:', 'rtsp:', 'mms:'].includes(u.protocol)) throw new UpnpError('IllegalMimeType', `cannot play ${u.protocol} URLs`);
}

/** A refused hub operation as the UPnP error a control point understands. */
export function toUpnpError(e: unknown): UpnpError {
  if (e instanceof UpnpError) return e;
  if (e instanceof HubCommandError) {
    switch (e.code) {
      case 'MediaNotFound':
      case 'MediaUrlRefused':
      case 'PlaybackFailed':
        return new UpnpError('ResourceNotFound', e.message);
      case 'UnsupportedScheme':
        return new UpnpError('IllegalMimeType', e.message);
      case 'InvalidParameter':
        return new UpnpError('ArgumentValueInvalid', e.message);
      default:
        return new UpnpError('ActionFailed', e.message);
    }
  }
  return new UpnpError('ActionFailed', (e as Error)?.message ?? 'failed');
}

const LAST_CHANGE_NS = { AVTransport: 'urn:schemas-upnp-org:metadata-1-0/AVT/', RenderingControl: 'urn:schemas-upnp-org:metadata-1-0/RCS/' };

/** A LastChange document (its own XML, escaped once more when it goes into the property set). */
export function lastChange(service: 'AVTransport' | 'RenderingControl', values: Record<string, string>): string {
  const vars = Object.entries(values)
    .map(([k, v]) => (service === 'RenderingControl' ? `<${k} channel="Master" val="${escapeXml(v)}"/>` : `<${k} val="${escapeXml(v)}"/>`))
    .join('');
  return `<Event xmlns="${LAST_CHANGE_NS[service]}"><InstanceID val="0">${vars}</InstanceID></Event>`;
}

/** The actions whose answer is the same whatever the renderer's state; InvalidAction for any other. */
export function fixedAnswer(action: string, a: Record<string, string>): Record<string, string | number> {
  switch (action) {
    case 'AVTransport#Previous':
      throw new UpnpError('TransitionNotAvailable', 'no previous track');
    case 'AVTransport#SetPlayMode':
      if (a.NewPlayMode !== 'NORMAL') throw new UpnpError('PlayModeNotSupported');
      return {};
    case 'AVTransport#GetDeviceCapabilities':
      return { PlayMedia: 'NETWORK', RecMedia: 'NOT_IMPLEMENTED', RecQualityModes: 'NOT_IMPLEMENTED' };
    case 'AVTransport#GetTransportSettings':
      return { PlayMode: 'NORMAL', RecQualityMode: 'NOT_IMPLEMENTED' };
    case 'RenderingControl#ListPresets':
      return { CurrentPresetNameList: 'FactoryDefaults' };
    case 'RenderingControl#SelectPreset':
      if (a.PresetName !== 'FactoryDefaults') throw new UpnpError('InvalidArgs', 'unknown preset');
      return {};
    case 'ConnectionManager#GetProtocolInfo':
      return { Source: '', Sink: SINK_PROTOCOLS };
    case 'ConnectionManager#GetCurrentConnectionIDs':
      return { ConnectionIDs: '0' };
    case 'ConnectionManager#GetCurrentConnectionInfo':
      if (a.ConnectionID.trim() !== '0') throw new UpnpError('InvalidConnectionReference');
      return { RcsID: 0, AVTransportID: 0, ProtocolInfo: '', PeerConnectionManager: '', PeerConnectionID: -1, Direction: 'Input', Status: 'OK' };
    default:
      throw new UpnpError('InvalidAction');
  }
}

/** GetMediaInfo's answer from the AVTransport values. */
export function mediaInfo(v: Record<(typeof AVT_EVENTED)[number], string>): Record<string, string> {
  return {
    NrTracks: v.NumberOfTracks,
    MediaDuration: v.CurrentMediaDuration,
    CurrentURI: v.AVTransportURI,
    CurrentURIMetaData: v.AVTransportURIMetaData,
    NextURI: v.NextAVTransportURI,
    NextURIMetaData: v.NextAVTransportURIMetaData,
    PlayMedium: v.PlaybackStorageMedium,
    RecordMedium: 'NOT_IMPLEMENTED',
    WriteStatus: 'NOT_IMPLEMENTED',
  };
}

/** GetPositionInfo's answer from the AVTransport values, at `rel` (H:MM:SS). */
export function positionInfo(v: Record<(typeof AVT_EVENTED)[number], string>, rel: string): Record<string, string | number> {
  return {
    Track: v.CurrentTrack,
    TrackDuration: v.CurrentTrackDuration,
    TrackMetaData: v.CurrentTrackMetaData,
    TrackURI: v.CurrentTrackURI,
    RelTime: rel,
    AbsTime: rel,
    RelCount: 2147483647,
    AbsCount: 2147483647,
  };
}
