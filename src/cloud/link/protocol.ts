/**
 * The messages on a hub's link (a WebSocket the hub opens to the cloud, JSON text frames).
 * The cloud sends operation requests; the hub answers each with the dispatch result.
 * Liveness is WebSocket ping/pong (the cloud pings; the hub expects the pings).
 */
export const LINK_PATH = '/hub/link';

export interface LinkRequest {
  t: 'req';
  id: number;
  op: string;
  params: Record<string, string>;
}

export type LinkResponse =
  | { t: 'res'; id: number; ok: true; body: Record<string, unknown> }
  | { t: 'res'; id: number; ok: false; error: { code: string; message: string; parameter?: string } };

/** The hub's first message after the link opens. */
export interface LinkHello {
  t: 'hello';
  uuid: string;
  version: string;
}

export type HubToCloud = LinkResponse | LinkHello;

/** Close codes the cloud uses; the hub re-authenticates on AUTH_FAILED. */
export const CLOSE_AUTH_FAILED = 4001;
export const CLOSE_SHUTDOWN = 1001;
