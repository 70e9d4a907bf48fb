import { buildScpd, type Action, type ServiceSpec as SharedSpec, type StateVariable } from '../protocols/upnp/scpd';

/**
 * The three services of a MediaRenderer:1, as data (src/protocols/upnp/scpd.ts): the SCPD documents are written from it,
 * and the SOAP dispatcher checks every action and its input arguments against it (401 for an
 * action a service does not have, 402 for a missing argument).
 */

export type ServiceName = 'AVTransport' | 'RenderingControl' | 'ConnectionManager';

export type ServiceSpec = SharedSpec<ServiceName>;
export type { Action, StateVariable };

const I = { InstanceID: 'A_ARG_TYPE_InstanceID' };

export const TRANSPORT_STATES = ['STOPPED', 'PLAYING', 'TRANSITIONING', 'PAUSED_PLAYBACK', 'NO_MEDIA_PRESENT'] as const;
export type TransportState = (typeof TRANSPORT_STATES)[number];

const AV_TRANSPORT: ServiceSpec = {
  name: 'AVTransport',
  type: 'urn:schemas-upnp-org:service:AVTransport:1',
  id: 'urn:upnp-org:serviceId:AVTransport',
  actions: [
    { name: 'SetAVTransportURI', in: { ...I, CurrentURI: 'AVTransportURI', CurrentURIMetaData: 'AVTransportURIMetaData' }, out: {} },
    { name: 'SetNextAVTransportURI', in: { ...I, NextURI: 'NextAVTransportURI', NextURIMetaData: 'NextAVTransportURIMetaData' }, out: {} },
    {
      name: 'GetMediaInfo',
      in: I,
      out: {
        NrTracks: 'NumberOfTracks',
        MediaDuration: 'CurrentMediaDuration',
        CurrentURI: 'AVTransportURI',
        CurrentURIMetaData: 'AVTransportURIMetaData',
        NextURI: 'NextAVTransportURI',
        NextURIMetaData: 'NextAVTransportURIMetaData',
        PlayMedium: 'PlaybackStorageMedium',
        RecordMedium: 'RecordStorageMedium',
        WriteStatus: 'RecordMediumWriteStatus',
      },
    },
    {
      name: 'GetTransportInfo',
      in: I,
      out: { CurrentTransportState: 'TransportState', CurrentTransportStatus: 'TransportStatus', CurrentSpeed: 'TransportPlaySpeed' },
    },
    {
      name: 'GetPositionInfo',
      in: I,
      out: {
        Track: 'CurrentTrack',
        TrackDuration: 'CurrentTrackDuration',
        TrackMetaData: 'CurrentTrackMetaData',
        TrackURI: 'CurrentTrackURI',
        RelTime: 'RelativeTimePosition',
        AbsTime: 'AbsoluteTimePosition',
        RelCount: 'RelativeCounterPosition',
        AbsCount: 'AbsoluteCounterPosition',
      },
    },
    {
      name: 'GetDeviceCapabilities',
      in: I,
      out: { PlayMedia: 'PossiblePlaybackStorageMedia', RecMedia: 'PossibleRecordStorageMedia', RecQualityModes: 'PossibleRecordQualityModes' },
    },
    { name: 'GetTransportSettings', in: I, out: { PlayMode: 'CurrentPlayMode', RecQualityMode: 'CurrentRecordQualityMode' } },
    { name: 'GetCurrentTransportActions', in: I, out: { Actions: 'CurrentTransportActions' } },
    { name: 'Stop', in: I, out: {} },
    { name: 'Play', in: { ...I, Speed: 'TransportPlaySpeed' }, out: {} },
    { name: 'Pause', in: I, out: {} },
    { name: 'Seek', in: { ...I, Unit: 'A_ARG_TYPE_SeekMode', Target: 'A_ARG_TYPE_SeekTarget' }, out: {} },
    { name: 'Next', in: I, out: {} },
    { name: 'Previous', in: I, out: {} },
    { name: 'SetPlayMode', in: { ...I, NewPlayMode: 'CurrentPlayMode' }, out: {} },
  ],
  variables: [
    { name: 'TransportState', type: 'string', allowed: TRANSPORT_STATES },
    { name: 'TransportStatus', type: 'string', allowed: ['OK', 'ERROR_OCCURRED'] },
    { name: 'PlaybackStorageMedium', type: 'string', allowed: ['NETWORK', 'NONE'] },
    { name: 'RecordStorageMedium', type: 'string', allowed: ['NOT_IMPLEMENTED'] },
    { name: 'PossiblePlaybackStorageMedia', type: 'string' },
    { name: 'PossibleRecordStorageMedia', type: 'string' },
    { name: 'CurrentPlayMode', type: 'string', allowed: ['NORMAL'] },
    { name: 'TransportPlaySpeed', type: 'string', allowed: ['1'] },
    { name: 'RecordMediumWriteStatus', type: 'string', allowed: ['NOT_IMPLEMENTED'] },
    { name: 'CurrentRecordQualityMode', type: 'string', allowed: ['NOT_IMPLEMENTED'] },
    { name: 'PossibleRecordQualityModes', type: 'string' },
    { name: 'NumberOfTracks', type: 'ui4', range: { min: 0, max: 1, step: 1 } },
    { name: 'CurrentTrack', type: 'ui4', range: { min: 0, max: 1, step: 1 } },
    { name: 'CurrentTrackDuration', type: 'string' },
    { name: 'CurrentMediaDuration', type: 'string' },
    { name: 'CurrentTrackMetaData', type: 'string' },
    { name: 'CurrentTrackURI', type: 'string' },
    { name: 'AVTransportURI', type: 'string' },
    { name: 'AVTransportURIMetaData', type: 'string' },
    { name: 'NextAVTransportURI', type: 'string' },
    { name: 'NextAVTransportURIMetaData', type: 'string' },
    { name: 'RelativeTimePosition', type: 'string' },
    { name: 'AbsoluteTimePosition', type: 'string' },
    { name: 'RelativeCounterPosition', type: 'i4' },
    { name: 'AbsoluteCounterPosition', type: 'i4' },
    { name: 'CurrentTransportActions', type: 'string' },
    { name: 'LastChange', type: 'string', events: true },
    { name: 'A_ARG_TYPE_SeekMode', type: 'string', allowed: ['REL_TIME', 'ABS_TIME', 'TRACK_NR'] },
    { name: 'A_ARG_TYPE_SeekTarget', type: 'string' },
    { name: 'A_ARG_TYPE_InstanceID', type: 'ui4' },
  ],
};

const RENDERING_CONTROL: ServiceSpec = {
  name: 'RenderingControl',
  type: 'urn:schemas-upnp-org:service:RenderingControl:1',
  id: 'urn:upnp-org:serviceId:RenderingControl',
  actions: [
    { name: 'ListPresets', in: I, out: { CurrentPresetNameList: 'PresetNameList' } },
    { name: 'SelectPreset', in: { ...I, PresetName: 'A_ARG_TYPE_PresetName' }, out: {} },
    { name: 'GetMute', in: { ...I, Channel: 'A_ARG_TYPE_Channel' }, out: { CurrentMute: 'Mute' } },
    { name: 'SetMute', in: { ...I, Channel: 'A_ARG_TYPE_Channel', DesiredMute: 'Mute' }, out: {} },
    { name: 'GetVolume', in: { ...I, Channel: 'A_ARG_TYPE_Channel' }, out: { CurrentVolume: 'Volume' } },
    { name: 'SetVolume', in: { ...I, Channel: 'A_ARG_TYPE_Channel', DesiredVolume: 'Volume' }, out: {} },
  ],
  variables: [
    { name: 'PresetNameList', type: 'string' },
    { name: 'Mute', type: 'boolean' },
    { name: 'Volume', type: 'ui2', range: { min: 0, max: 100, step: 1 } },
    { name: 'LastChange', type: 'string', events: true },
    { name: 'A_ARG_TYPE_Channel', type: 'string', allowed: ['Master'] },
    { name: 'A_ARG_TYPE_InstanceID', type: 'ui4' },
    { name: 'A_ARG_TYPE_PresetName', type: 'string', allowed: ['FactoryDefaults'] },
  ],
};

const CONNECTION_MANAGER: ServiceSpec = {
  name: 'ConnectionManager',
  type: 'urn:schemas-upnp-org:service:ConnectionManager:1',
  id: 'urn:upnp-org:serviceId:ConnectionManager',
  actions: [
    { name: 'GetProtocolInfo', in: {}, out: { Source: 'SourceProtocolInfo', Sink: 'SinkProtocolInfo' } },
    { name: 'GetCurrentConnectionIDs', in: {}, out: { ConnectionIDs: 'CurrentConnectionIDs' } },
    {
      name: 'GetCurrentConnectionInfo',
      in: { ConnectionID: 'A_ARG_TYPE_ConnectionID' },
      out: {
        RcsID: 'A_ARG_TYPE_RcsID',
        AVTransportID: 'A_ARG_TYPE_AVTransportID',
        ProtocolInfo: 'A_ARG_TYPE_ProtocolInfo',
        PeerConnectionManager: 'A_ARG_TYPE_ConnectionManager',
        PeerConnectionID: 'A_ARG_TYPE_ConnectionID',
        Direction: 'A_ARG_TYPE_Direction',
        Status: 'A_ARG_TYPE_ConnectionStatus',
      },
    },
  ],
  variables: [
    { name: 'SourceProtocolInfo', type: 'string', events: true },
    { name: 'SinkProtocolInfo', type: 'string', events: true },
    { name: 'CurrentConnectionIDs', type: 'string', events: true },
    {
      name: 'A_ARG_TYPE_ConnectionStatus',
      type: 'string',
      allowed: ['OK', 'ContentFormatMismatch', 'InsufficientBandwidth', 'UnreliableChannel', 'Unknown'],
    },
    { name: 'A_ARG_TYPE_ConnectionManager', type: 'string' },
    { name: 'A_ARG_TYPE_Direction', type: 'string', allowed: ['Input', 'Output'] },
    { name: 'A_ARG_TYPE_ProtocolInfo', type: 'string' },
    { name: 'A_ARG_TYPE_ConnectionID', type: 'i4' },
    { name: 'A_ARG_TYPE_AVTransportID', type: 'i4' },
    { name: 'A_ARG_TYPE_RcsID', type: 'i4' },
  ],
};

export const SERVICES: Record<ServiceName, ServiceSpec> = {
  AVTransport: AV_TRANSPORT,
  RenderingControl: RENDERING_CONTROL,
  ConnectionManager: CONNECTION_MANAGER,
};

export const SERVICE_NAMES = Object.keys(SERVICES) as ServiceName[];

export function findAction(service: ServiceName, name: string): Action | undefined {
  return SERVICES[service].actions.find((a) => a.name === name);
}

/** The SCPD document of a service (the same for every renderer). */
export function scpdXml(service: ServiceName): string {
  return buildScpd(SERVICES[service]);
}
