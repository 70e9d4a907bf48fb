import { z } from 'zod';
import type { HubCore } from '../core/hub-core';

/** What every entry of the operation table (table.ts) is, and the helper that builds one. */

export type OperationGroup = 'session' | 'device' | 'playback' | 'volume' | 'announcement';

export interface OperationContext {
  /** The caller's SessionToken (already checked and renewed), for session operations. */
  sessionToken?: string;
  /** The session's key in the table (the token's SHA-256): what the session scopes key on. */
  sessionKey?: string;
}

export interface Operation<N extends string = string, P extends z.ZodObject = z.ZodObject, R extends z.ZodType = z.ZodType> {
  name: N;
  group: OperationGroup;
  summary: string;
  /** False only for init_session. */
  needsSession: boolean;
  /** Cloud mode adds ResponseOf to these responses (spec, Conventions). */
  cloudResponseOf: boolean;
  /** Parameters other than SessionToken. */
  params: P;
  response: R;
  /** An example request's parameters, for the docs ("$X" names a shell variable an earlier example set). */
  example: Record<string, string>;
  /** For the docs' example script: the shell variable this example's answer sets, from which field. */
  exampleCaptures?: { variable: string; field: string };
  /** Not in the Speaker Control Service spec (SpeakerHub's own additions). */
  beyondSpec?: boolean;
  // Method syntax on purpose: a typed entry (Operation<'set_volume', …>) stays assignable to
  // the general Operation that front ends loop over.
  handler(hub: HubCore, params: z.output<P>, ctx: OperationContext): Promise<z.input<R>> | z.input<R>;
}

/** An entry of the table: what is particular to the operation; define() fills the rest. */
type OperationSpec<N extends string, P extends z.ZodObject, R extends z.ZodType> = Omit<
  Operation<N, P, R>,
  'needsSession' | 'cloudResponseOf' | 'params' | 'example'
> &
  Partial<Pick<Operation<N, P, R>, 'needsSession' | 'params' | 'example'>>;

/** Fills the common defaults and keeps the entry's types: its literal name, parameter and response schemas. */
export function define<const N extends string, P extends z.ZodObject = typeof NoParams, R extends z.ZodType = z.ZodType>(
  spec: OperationSpec<N, P, R>,
): Operation<N, P, R> {
  return {
    needsSession: true,
    // Without params the entry takes none; P then is typeof NoParams (its default).
    params: NoParams as unknown as P,
    example: {},
    ...spec,
    cloudResponseOf: RESPONSE_OF.has(spec.name),
  };
}

/**
 * IDs the documentation's examples use, valid on every default hub (so every docs example
 * runs as written): the first two virtual speakers (DeviceIDs derived from "virtual:1" and
 * "virtual:2"), the first sample track (its PersistentID depends on its file name only), and
 * the second sample as web media served by the hub itself.
 */
export const EXAMPLE = {
  deviceId: '12106658486352',
  otherDeviceId: '25350427372477',
  persistentId: '5993970893696861521',
  mediaUrl: 'http://127.0.0.1:8090/samples/sample-tone-2-little-waltz.wav',
} as const;

export const ok = { Result: 'true' } as const;
export const bool = (b: boolean): 'true' | 'false' => (b ? 'true' : 'false');
export const NoParams = z.object({});

/** Operations whose responses carry ResponseOf in cloud mode (spec, Conventions). */
const RESPONSE_OF = new Set([
  'init_session',
  'set_party_mode',
  'device_list',
  'add_device_to_session',
  'play_hub_media',
  'play_hub_media_selected_speakers',
  'play_web_media_party_mode',
  'stop_play',
  'set_volume',
]);
