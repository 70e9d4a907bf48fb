import { z } from 'zod';

/**
 * The messages on a hub's link to SpeakerHub Cloud (a WebSocket the hub opens to the cloud,
 * JSON text frames): the cloud sends operation requests; the hub answers each with the
 * dispatch result. Liveness is WebSocket ping/pong (the cloud pings; the hub expects them).
 * Shared by both ends (src/cloud and src/cloud-link), so it sits with neither; every frame is
 * validated with these schemas, as every other input is, and a frame that fails is dropped.
 */
export const LINK_PATH = '/hub/link';

/** Bounds of one frame's fields: a link carries operations, not bulk data. */
const Id = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const Code = z.string().min(1).max(64);

export const LinkRequestSchema = z.object({
  t: z.literal('req'),
  id: Id,
  op: z.string().min(1).max(100),
  params: z.record(z.string(), z.unknown()).default({}),
});
export type LinkRequest = z.input<typeof LinkRequestSchema> & { params: Record<string, unknown> };

const LinkResponseSchema = z.union([
  z.object({ t: z.literal('res'), id: Id, ok: z.literal(true), body: z.record(z.string(), z.unknown()).default({}) }),
  z.object({
    t: z.literal('res'),
    id: Id,
    ok: z.literal(false),
    error: z.object({ code: Code, message: z.string().max(20_000), parameter: z.string().max(100).optional() }),
  }),
]);
export type LinkResponse = z.output<typeof LinkResponseSchema>;

/** The hub's first message after the link opens. */
const LinkHelloSchema = z.object({ t: z.literal('hello'), uuid: z.string().min(1).max(64), version: z.string().max(64) });
export type LinkHello = z.output<typeof LinkHelloSchema>;

export const HubToCloudSchema = z.union([LinkResponseSchema, LinkHelloSchema]);
export type HubToCloud = z.output<typeof HubToCloudSchema>;

/** A frame from the cloud, or undefined when it is not JSON or not a request. */
export function parseLinkRequest(text: string): z.output<typeof LinkRequestSchema> | undefined {
  return parseFrame(text, LinkRequestSchema);
}

/** A frame from the hub, or undefined when it is not JSON or not a response/hello. */
export function parseHubToCloud(text: string): HubToCloud | undefined {
  return parseFrame(text, HubToCloudSchema);
}

function parseFrame<S extends z.ZodType>(text: string, schema: S): z.output<S> | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  const r = schema.safeParse(json);
  return r.success ? r.data : undefined;
}

/** Close codes the cloud uses; the hub re-authenticates on AUTH_FAILED. */
export const CLOSE_AUTH_FAILED = 4001;
export const CLOSE_SHUTDOWN = 1001;
/**
 * The account's link that failed a liveness ping was closed for a newer one (older clouds
 * closed the oldest link, live or not, with it). The hub relinks after its backoff.
 */
export const CLOSE_REPLACED = 4002;
/**
 * The account already holds its maximum of live links (each answered a ping): this newer one
 * is refused, so that whoever else holds a link token cannot push the real hubs out. The hub
 * keeps retrying with its backoff and says so in its log.
 */
export const CLOSE_LINK_LIMIT = 4003;
