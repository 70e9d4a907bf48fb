import { createHash } from 'node:crypto';
import type { SearchableObject } from '../protocols/upnp/search-criteria';
import type { MediaItem } from '../media/types';
import { compareTitles } from '../media/title-order';

/**
 * The MediaServer's object tree over the hub's library, rebuilt when the library changes:
 *
 *   0 (root)
 *   ├── tracks                      All tracks
 *   │   └── tracks/<PersistentID>   a track
 *   ├── artists                     Artists
 *   │   └── artists/<key>           an artist → artists/<key>/<PersistentID>
 *   └── albums                      Albums
 *       └── albums/<key>            an album → albums/<key>/<PersistentID>
 *
 * An ID names its parent (all but its last segment), so BrowseMetadata of any ID a control
 * point kept finds its object without state. A key is a hash of the name (IDs stay short and
 * free of characters a control point might mangle).
 */

export const ROOT = '0';
export const UNKNOWN_ARTIST = 'Unknown artist';
export const UNKNOWN_ALBUM = 'Unknown album';

export const CLASSES = {
  storage: 'object.container.storageFolder',
  artist: 'object.container.person.musicArtist',
  album: 'object.container.album.musicAlbum',
  track: 'object.item.audioItem.musicTrack',
} as const;

export interface TreeObject {
  id: string;
  parentId: string;
  title: string;
  upnpClass: string;
  /** Containers: how many children. */
  childCount?: number;
  /** Items: the library item. */
  item?: MediaItem;
  artist?: string;
  album?: string;
  /** The item whose cover stands for the object (an album's first track with one). */
  coverItem?: MediaItem;
}

interface Group {
  key: string;
  name: string;
  items: MediaItem[];
  artist?: string;
}

const TOP: { id: string; title: string }[] = [
  { id: 'tracks', title: 'All tracks' },
  { id: 'artists', title: 'Artists' },
  { id: 'albums', title: 'Albums' },
];

function keyOf(name: string): string {
  return createHash('sha1').update(name.toLowerCase()).digest('hex').slice(0, 12);
}

function byTrack(a: MediaItem, b: MediaItem): number {
  return (a.track ?? 1e9) - (b.track ?? 1e9) || compareTitles(a.title, b.title);
}

function group(items: MediaItem[], nameOf: (i: MediaItem) => string): Map<string, Group> {
  const out = new Map<string, Group>();
  for (const i of items) {
    const name = nameOf(i);
    const key = keyOf(name);
    let g = out.get(key);
    if (!g) out.set(key, (g = { key, name, items: [] }));
    g.items.push(i);
  }
  return new Map([...out.entries()].sort((a, b) => compareTitles(a[1].name, b[1].name)));
}

export class LibraryTree {
  private readonly tracks: MediaItem[];
  private readonly artists: Map<string, Group>;
  private readonly albums: Map<string, Group>;
  private readonly byId: Map<string, MediaItem>;
  /** The three big lists, made once per tree (pages of them are what control points ask for most). */
  private readonly lists = new Map<string, TreeObject[]>();

  constructor(items: MediaItem[]) {
    this.tracks = items;
    this.byId = new Map(items.map((i) => [i.persistentId, i]));
    this.artists = group(items, (i) => i.artist || UNKNOWN_ARTIST);
    for (const g of this.artists.values()) g.items.sort((a, b) => compareTitles(a.album, b.album) || byTrack(a, b));
    this.albums = group(items, (i) => i.album || UNKNOWN_ALBUM);
    for (const g of this.albums.values()) {
      g.items.sort(byTrack);
      const artists = new Set(g.items.map((i) => i.artist).filter(Boolean));
      g.artist = artists.size === 1 ? [...artists][0] : artists.size > 1 ? 'Various artists' : undefined;
    }
  }

  get size(): number {
    return this.tracks.length;
  }

  /** The object of an ID, or undefined (701 No such object). */
  object(id: string): TreeObject | undefined {
    if (id === ROOT) return { id, parentId: '-1', title: 'SpeakerHub library', upnpClass: CLASSES.storage, childCount: TOP.length };
    const parts = id.split('/');
    if (parts.length === 1) {
      const top = TOP.find((t) => t.id === id);
      return top && this.topObject(top.id, top.title);
    }
    const [kind, a, b] = parts;
    if (kind === 'tracks' && parts.length === 2) {
      const item = this.byId.get(a);
      return item && this.trackObject('tracks', item);
    }
    const g = kind === 'artists' ? this.artists.get(a) : kind === 'albums' ? this.albums.get(a) : undefined;
    if (!g) return undefined;
    if (parts.length === 2) return this.groupObject(kind as 'artists' | 'albums', g);
    if (parts.length !== 3) return undefined;
    const item = this.find(g.items, b);
    return item && this.trackObject(`${kind}/${a}`, item);
  }

  /** The children of a container (undefined: no such container; an item has none). */
  children(id: string): TreeObject[] | undefined {
    if (id === ROOT) return TOP.map((t) => this.topObject(t.id, t.title));
    if (id === 'tracks' || id === 'artists' || id === 'albums') {
      let list = this.lists.get(id);
      if (!list) {
        list =
          id === 'tracks'
            ? this.tracks.map((i) => this.trackObject('tracks', i))
            : [...(id === 'artists' ? this.artists : this.albums).values()].map((g) => this.groupObject(id, g));
        this.lists.set(id, list);
      }
      return list;
    }
    const [kind, key, extra] = id.split('/');
    // An item has no children.
    if (extra !== undefined || kind === 'tracks') return this.object(id) ? [] : undefined;
    const g = kind === 'artists' ? this.artists.get(key) : kind === 'albums' ? this.albums.get(key) : undefined;
    return g?.items.map((i) => this.trackObject(id, i));
  }

  /** Everything under a container, for Search: its containers and its tracks, each once. */
  descendants(id: string): TreeObject[] | undefined {
    if (id === ROOT) return [...this.children('artists')!, ...this.children('albums')!, ...this.children('tracks')!];
    if (id === 'artists' || id === 'albums') {
      const groups = this.children(id)!;
      return [...groups, ...groups.flatMap((g) => this.children(g.id)!)];
    }
    return this.children(id);
  }

  private find(items: MediaItem[], persistentId: string): MediaItem | undefined {
    const item = this.byId.get(persistentId);
    return item && items.includes(item) ? item : undefined;
  }

  private topObject(id: string, title: string): TreeObject {
    const count = id === 'tracks' ? this.tracks.length : id === 'artists' ? this.artists.size : this.albums.size;
    return { id, parentId: ROOT, title, upnpClass: CLASSES.storage, childCount: count };
  }

  private groupObject(kind: 'artists' | 'albums', g: Group): TreeObject {
    return {
      id: `${kind}/${g.key}`,
      parentId: kind,
      title: g.name,
      upnpClass: kind === 'artists' ? CLASSES.artist : CLASSES.album,
      childCount: g.items.length,
      ...(kind === 'albums' ? { artist: g.artist, album: g.name, coverItem: g.items.find((i) => i.artwork) } : { artist: g.name }),
    };
  }

  private trackObject(parentId: string, item: MediaItem): TreeObject {
    return {
      id: `${parentId}/${item.persistentId}`,
      parentId,
      title: item.title,
      upnpClass: CLASSES.track,
      item,
      artist: item.artist || undefined,
      album: item.album || undefined,
      coverItem: item.artwork ? item : undefined,
    };
  }
}

/** An object's properties as Search sees them. */
export function searchable(o: TreeObject): SearchableObject {
  return {
    'upnp:class': o.upnpClass,
    'dc:title': o.title,
    '@id': o.id,
    // Home Assistant's dlna_dms resolves a path by searching `@parentID="…" and dc:title="…"`.
    '@parentID': o.parentId,
    ...(o.artist ? { 'upnp:artist': o.artist, 'dc:creator': o.artist } : {}),
    ...(o.album ? { 'upnp:album': o.album } : {}),
  };
}
