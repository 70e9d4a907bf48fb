/**
 * GENA for the published devices lives in src/protocols/upnp (gena-publisher.ts, gena.ts).
 * This re-export is only for http-server.ts, whose imports another change edits at the same
 * time: the merge can point it at src/protocols/upnp/gena-publisher directly and drop this file.
 */
export type { GenaAnswer } from '../protocols/upnp/gena-publisher';
