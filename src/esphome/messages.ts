import protobuf from 'protobufjs';
import { API_PROTO, MESSAGE_IDS, type MessageName } from './api-proto';

/**
 * Encoding and decoding of the native API's messages by wire id, with protobufjs over the
 * api.proto excerpt. A message that does not decode throws (the connection treats that as a
 * malformed frame); an id the excerpt does not hold decodes to undefined (ignored).
 */
const root = protobuf.parse(API_PROTO, { keepCase: true }).root;
const byId = new Map<number, { name: MessageName; type: protobuf.Type }>();
for (const [name, id] of Object.entries(MESSAGE_IDS) as [MessageName, number][]) byId.set(id, { name, type: root.lookupType(name) });

export interface Decoded {
  name: MessageName;
  /** Field values by their proto names (snake_case), defaults filled in. */
  body: Record<string, unknown>;
}

export function decodeMessage(id: number, data: Uint8Array): Decoded | undefined {
  const t = byId.get(id);
  if (!t) return undefined;
  const msg = t.type.decode(data);
  return { name: t.name, body: t.type.toObject(msg, { defaults: true, longs: Number, enums: Number }) };
}

export function encodeMessage(name: MessageName, body: Record<string, unknown> = {}): { id: number; data: Buffer } {
  const type = root.lookupType(name);
  const data = type.encode(type.fromObject(body)).finish();
  return { id: MESSAGE_IDS[name], data: Buffer.from(data.buffer, data.byteOffset, data.byteLength) };
}
