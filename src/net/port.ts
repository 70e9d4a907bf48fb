import { z } from 'zod';

/** A TCP/UDP port a peer may name: 1–65535 (0 means "none" and is not one to send to). */
export const PortSchema = z.number().int().min(1).max(65535);

/**
 * A port number from a peer's text (a Transport header, a TXT record), or undefined when it is
 * not one: digits only (no '1e3', '0x50', ' 80'), in range. Sending to an out-of-range port
 * throws synchronously in node:dgram, so every port a peer gives goes through here first.
 */
export function parsePort(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d{1,5}$/.test(text)) return undefined;
  const r = PortSchema.safeParse(Number(text));
  return r.success ? r.data : undefined;
}
