import { didlDocument, didlObject } from '../protocols/upnp/didl';

/** The renderers' own DIDL-Lite: what they report for a play (reading and times: src/protocols/upnp/didl.ts). */

/** A DIDL-Lite document for a track the hub plays (a play that did not come from this control point). */
export function writeDidl(url: string, title: string | undefined, mime = '*'): string {
  return didlDocument([
    didlObject({
      id: '0',
      parentId: '-1',
      title: title ?? url,
      upnpClass: 'object.item.audioItem.musicTrack',
      // No URL (hub media, whose URL is a secret): a title without a resource.
      ...(url ? { res: { url, protocolInfo: `http-get:*:${mime}:*` } } : {}),
    }),
  ]);
}
