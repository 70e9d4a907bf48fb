import { z } from 'zod';

/** Cloud mode: the hub's link to SpeakerHub Cloud (config `cloud`). */
export const CloudLinkConfigSchema = z
  .object({
    /** The cloud's origin; no link without it. */
    url: z.url().optional(),
    /** Sign in with these when there is no saved link token (or the cloud refuses it). */
    username: z
      .string()
      .regex(/^[A-Za-z0-9._-]{2,32}$/, 'cloud.username must be 2–32 letters, digits, ".", "_" or "-"')
      .optional(),
    /** File holding the cloud password for that sign-in (one trailing newline dropped): the password itself never goes in the config. */
    passwordFile: z.string().min(1).optional(),
    /** A ping over the link each interval; one still unanswered at the next closes it. */
    heartbeatSeconds: z.number().positive().max(300).default(15),
    /** First reconnect wait; it doubles (with jitter) up to maxBackoffSeconds. */
    reconnectBaseMs: z.number().int().min(1).default(500),
    /** Reconnect backoff cap (at most 10 s). */
    maxBackoffSeconds: z.number().positive().max(10).default(10),
  })
  .strict();

export type CloudLinkConfig = z.output<typeof CloudLinkConfigSchema>;
