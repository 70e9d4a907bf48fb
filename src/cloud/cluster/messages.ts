import { z } from 'zod';

/**
 * What cloud instances tell each other through Redis pub/sub (JSON). On an instance's own
 * channel: relay requests for a hub linked there, and the answers to requests it sent.
 * On the events channel: a hub linked somewhere (requests waiting for it retry), a token
 * family revoked (every instance evicts its cached access tokens). On an instance's channel
 * too: close a link of yours (an account's cap of links is cluster-wide).
 * Validated like every other input: a message that fails is dropped.
 */
const Id = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const Instance = z.string().min(1).max(64);
const UserId = z.string().min(1).max(100);

const RelayRequest = z.object({
  t: z.literal('req'),
  id: Id,
  from: Instance,
  userId: UserId,
  op: z.string().min(1).max(100),
  params: z.record(z.string(), z.string()),
  /** Milliseconds the requester still waits: the hub gets no longer than that. */
  ttl: z.number().int().min(1).max(600_000),
});

const RelayAnswer = z.object({
  t: z.literal('res'),
  id: Id,
  /** No hub of that user is linked here (any more): look up where it went. */
  moved: z.boolean().optional(),
  ok: z.boolean(),
  body: z.record(z.string(), z.unknown()).optional(),
  error: z.object({ code: z.string().min(1).max(64), message: z.string().max(20_000), parameter: z.string().max(100).optional() }).optional(),
});

const Linked = z.object({ t: z.literal('linked'), userId: UserId, instance: Instance });
const Revoked = z.object({ t: z.literal('revoked'), familyId: z.string().min(1).max(100) });
/** On an instance's channel: close this link of yours, the account holds more than its cap across the cluster. */
const DropLink = z.object({ t: z.literal('drop'), userId: UserId, seq: Id });

/** On the events channel: the user's link tokens but the one with digest `keep` were revoked; close their links. */
const LinksRevoked = z.object({ t: z.literal('links-revoked'), userId: UserId, keep: z.string().min(1).max(100) });

const BusMessageSchema = z.discriminatedUnion('t', [RelayRequest, RelayAnswer, Linked, Revoked, DropLink, LinksRevoked]);
export type BusMessage = z.output<typeof BusMessageSchema>;
export type RelayRequestMessage = z.output<typeof RelayRequest>;
export type RelayAnswerMessage = z.output<typeof RelayAnswer>;

export function parseBusMessage(text: string): BusMessage | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  const r = BusMessageSchema.safeParse(json);
  return r.success ? r.data : undefined;
}
