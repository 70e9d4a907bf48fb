/**
 * The part of ESPHome's native API protocol this server speaks: an excerpt of `api.proto` from
 * aioesphomeapi (https://github.com/esphome/aioesphomeapi, aioesphomeapi/api.proto at version
 * 45.13.1, commit 368a145f), MIT License, Copyright (c) 2018 Otto Winter. Message and field
 * numbers are unchanged; the generator's custom options (`option (id)`, `(field_ifdef)` …) are
 * left out (protobufjs needs none of them) and the message ids they carried are in MESSAGE_IDS.
 * Messages not listed here are unknown to the server and ignored, as an ESPHome device ignores
 * a message of a component it was built without.
 */
export const API_PROTO = `
syntax = "proto3";

message HelloRequest {
  string client_info = 1;
  uint32 api_version_major = 2;
  uint32 api_version_minor = 3;
}
message HelloResponse {
  uint32 api_version_major = 1;
  uint32 api_version_minor = 2;
  string server_info = 3;
  string name = 4;
}
message AuthenticationRequest {
  string password = 1;
}
message AuthenticationResponse {
  bool invalid_password = 1;
}
message DisconnectRequest {
  uint32 reason = 1;
}
message DisconnectResponse {}
message PingRequest {}
message PingResponse {}
message DeviceInfoRequest {}
message AreaInfo {
  uint32 area_id = 1;
  string name = 2;
}
message DeviceInfo {
  uint32 device_id = 1;
  string name = 2;
  uint32 area_id = 3;
}
message DeviceInfoResponse {
  bool uses_password = 1;
  string name = 2;
  string mac_address = 3;
  string esphome_version = 4;
  string compilation_time = 5;
  string model = 6;
  bool has_deep_sleep = 7;
  string project_name = 8;
  string project_version = 9;
  uint32 webserver_port = 10;
  string manufacturer = 12;
  string friendly_name = 13;
  string suggested_area = 16;
  bool api_encryption_supported = 19;
  repeated DeviceInfo devices = 20;
  repeated AreaInfo areas = 21;
  AreaInfo area = 22;
}
message DeviceCapabilitiesRequest {}
message DeviceCapabilitiesResponse {}
message ListEntitiesRequest {}
message ListEntitiesDoneResponse {}
message SubscribeStatesRequest {}
message NoiseEncryptionSetKeyRequest {
  bytes key = 1;
}
message NoiseEncryptionSetKeyResponse {
  bool success = 1;
}

enum EntityCategory {
  ENTITY_CATEGORY_NONE = 0;
  ENTITY_CATEGORY_CONFIG = 1;
  ENTITY_CATEGORY_DIAGNOSTIC = 2;
}
enum MediaPlayerState {
  MEDIA_PLAYER_STATE_NONE = 0;
  MEDIA_PLAYER_STATE_IDLE = 1;
  MEDIA_PLAYER_STATE_PLAYING = 2;
  MEDIA_PLAYER_STATE_PAUSED = 3;
  MEDIA_PLAYER_STATE_ANNOUNCING = 4;
  MEDIA_PLAYER_STATE_OFF = 5;
  MEDIA_PLAYER_STATE_ON = 6;
}
enum MediaPlayerCommand {
  MEDIA_PLAYER_COMMAND_PLAY = 0;
  MEDIA_PLAYER_COMMAND_PAUSE = 1;
  MEDIA_PLAYER_COMMAND_STOP = 2;
  MEDIA_PLAYER_COMMAND_MUTE = 3;
  MEDIA_PLAYER_COMMAND_UNMUTE = 4;
  MEDIA_PLAYER_COMMAND_TOGGLE = 5;
  MEDIA_PLAYER_COMMAND_VOLUME_UP = 6;
  MEDIA_PLAYER_COMMAND_VOLUME_DOWN = 7;
  MEDIA_PLAYER_COMMAND_ENQUEUE = 8;
  MEDIA_PLAYER_COMMAND_REPEAT_ONE = 9;
  MEDIA_PLAYER_COMMAND_REPEAT_OFF = 10;
  MEDIA_PLAYER_COMMAND_CLEAR_PLAYLIST = 11;
  MEDIA_PLAYER_COMMAND_TURN_ON = 12;
  MEDIA_PLAYER_COMMAND_TURN_OFF = 13;
}
enum MediaPlayerFormatPurpose {
  MEDIA_PLAYER_FORMAT_PURPOSE_DEFAULT = 0;
  MEDIA_PLAYER_FORMAT_PURPOSE_ANNOUNCEMENT = 1;
}
message MediaPlayerSupportedFormat {
  string format = 1;
  uint32 sample_rate = 2;
  uint32 num_channels = 3;
  MediaPlayerFormatPurpose purpose = 4;
  uint32 sample_bytes = 5;
}
message ListEntitiesMediaPlayerResponse {
  string object_id = 1;
  fixed32 key = 2;
  string name = 3;
  string icon = 5;
  bool disabled_by_default = 6;
  EntityCategory entity_category = 7;
  bool supports_pause = 8;
  repeated MediaPlayerSupportedFormat supported_formats = 9;
  uint32 device_id = 10;
  uint32 feature_flags = 11;
}
message MediaPlayerStateResponse {
  fixed32 key = 1;
  MediaPlayerState state = 2;
  float volume = 3;
  bool muted = 4;
  uint32 device_id = 5;
}
message MediaPlayerCommandRequest {
  fixed32 key = 1;
  bool has_command = 2;
  MediaPlayerCommand command = 3;
  bool has_volume = 4;
  float volume = 5;
  bool has_media_url = 6;
  string media_url = 7;
  bool has_announcement = 8;
  bool announcement = 9;
  uint32 device_id = 10;
}
`;

/** Each message's id on the wire (its `option (id)` in api.proto). */
export const MESSAGE_IDS = {
  HelloRequest: 1,
  HelloResponse: 2,
  AuthenticationRequest: 3,
  AuthenticationResponse: 4,
  DisconnectRequest: 5,
  DisconnectResponse: 6,
  PingRequest: 7,
  PingResponse: 8,
  DeviceInfoRequest: 9,
  DeviceInfoResponse: 10,
  ListEntitiesRequest: 11,
  ListEntitiesDoneResponse: 19,
  SubscribeStatesRequest: 20,
  ListEntitiesMediaPlayerResponse: 63,
  MediaPlayerStateResponse: 64,
  MediaPlayerCommandRequest: 65,
  NoiseEncryptionSetKeyRequest: 124,
  NoiseEncryptionSetKeyResponse: 125,
  DeviceCapabilitiesRequest: 149,
  DeviceCapabilitiesResponse: 150,
} as const;

export type MessageName = keyof typeof MESSAGE_IDS;

/** MediaPlayerState values. */
export const PlayerState = { IDLE: 1, PLAYING: 2, PAUSED: 3, ANNOUNCING: 4 } as const;
export type PlayerStateValue = (typeof PlayerState)[keyof typeof PlayerState];

/** MediaPlayerCommand values. */
export const PlayerCommand = {
  PLAY: 0,
  PAUSE: 1,
  STOP: 2,
  MUTE: 3,
  UNMUTE: 4,
  TOGGLE: 5,
  VOLUME_UP: 6,
  VOLUME_DOWN: 7,
  TURN_ON: 12,
  TURN_OFF: 13,
} as const;
