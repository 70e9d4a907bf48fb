import { DidlFilter, didlDocument, didlObject, type DidlObject } from '../protocols/upnp/didl';
import type { ServiceSpec } from '../protocols/upnp/scpd';
import { matchesCriteria, parseSearchCriteria, SearchCriteriaError, SEARCH_PROPERTIES } from '../protocols/upnp/search-criteria';
import { UpnpError } from '../protocols/upnp/soap';
import type { LibraryAccess, MediaItem } from '../media/types';
import { compareTitles } from '../media/title-order';
import { LibraryTree, searchable, type TreeObject } from './library-tree';

/**
 * ContentDirectory:1 over the hub's library: Browse (metadata and children, paged), Search,
 * the capabilities and the SystemUpdateID. Bounded: a page holds at most MAX_PAGE objects
 * (RequestedCount 0 or more means MAX_PAGE), ObjectIDs and Filters are length-capped, search
 * criteria are capped in length and terms (search-criteria.ts). Errors are UpnpErrors: 701 no
 * such object, 708 search criteria, 709 sort criteria, 710 no such container, 402 arguments.
 */

export const MAX_PAGE = 500;
const MAX_ID_CHARS = 256;
const MAX_FILTER_CHARS = 2048;
const MAX_SORT_CHARS = 256;

const ui4 = 'ui4' as const;
export const CONTENT_DIRECTORY: ServiceSpec<'ContentDirectory'> = {
  name: 'ContentDirectory',
  type: 'urn:schemas-upnp-org:service:ContentDirectory:1',
  id: 'urn:upnp-org:serviceId:ContentDirectory',
  actions: [
    { name: 'GetSearchCapabilities', in: {}, out: { SearchCaps: 'SearchCapabilities' } },
    { name: 'GetSortCapabilities', in: {}, out: { SortCaps: 'SortCapabilities' } },
    { name: 'GetSystemUpdateID', in: {}, out: { Id: 'SystemUpdateID' } },
    {
      name: 'Browse',
      in: {
        ObjectID: 'A_ARG_TYPE_ObjectID',
        BrowseFlag: 'A_ARG_TYPE_BrowseFlag',
        Filter: 'A_ARG_TYPE_Filter',
        StartingIndex: 'A_ARG_TYPE_Index',
        RequestedCount: 'A_ARG_TYPE_Count',
        SortCriteria: 'A_ARG_TYPE_SortCriteria',
      },
      out: { Result: 'A_ARG_TYPE_Result', NumberReturned: 'A_ARG_TYPE_Count', TotalMatches: 'A_ARG_TYPE_Count', UpdateID: 'A_ARG_TYPE_UpdateID' },
    },
    {
      name: 'Search',
      in: {
        ContainerID: 'A_ARG_TYPE_ObjectID',
        SearchCriteria: 'A_ARG_TYPE_SearchCriteria',
        Filter: 'A_ARG_TYPE_Filter',
        StartingIndex: 'A_ARG_TYPE_Index',
        RequestedCount: 'A_ARG_TYPE_Count',
        SortCriteria: 'A_ARG_TYPE_SortCriteria',
      },
      out: { Result: 'A_ARG_TYPE_Result', NumberReturned: 'A_ARG_TYPE_Count', TotalMatches: 'A_ARG_TYPE_Count', UpdateID: 'A_ARG_TYPE_UpdateID' },
    },
  ],
  variables: [
    { name: 'SearchCapabilities', type: 'string' },
    { name: 'SortCapabilities', type: 'string' },
    { name: 'SystemUpdateID', type: ui4, events: true },
    { name: 'A_ARG_TYPE_ObjectID', type: 'string' },
    { name: 'A_ARG_TYPE_Result', type: 'string' },
    { name: 'A_ARG_TYPE_SearchCriteria', type: 'string' },
    { name: 'A_ARG_TYPE_BrowseFlag', type: 'string', allowed: ['BrowseMetadata', 'BrowseDirectChildren'] },
    { name: 'A_ARG_TYPE_Filter', type: 'string' },
    { name: 'A_ARG_TYPE_SortCriteria', type: 'string' },
    { name: 'A_ARG_TYPE_Index', type: ui4 },
    { name: 'A_ARG_TYPE_Count', type: ui4 },
    { name: 'A_ARG_TYPE_UpdateID', type: ui4 },
  ],
};

const SORT_KEYS: Record<string, (a: TreeObject, b: TreeObject) => number> = {
  'upnp:class': (a, b) => compareTitles(a.upnpClass, b.upnpClass),
  'dc:title': (a, b) => compareTitles(a.title, b.title),
  'upnp:artist': (a, b) => compareTitles(a.artist ?? '', b.artist ?? ''),
  'dc:creator': (a, b) => compareTitles(a.artist ?? '', b.artist ?? ''),
  'upnp:album': (a, b) => compareTitles(a.album ?? '', b.album ?? ''),
  // A track number means something only on its album: sorted by it, tracks go album by album,
  // each in track order. Home Assistant's dlna_dms asks for +upnp:originalTrackNumber in every
  // container, "All tracks" included, where plain numbers would interleave every album.
  'upnp:originalTrackNumber': (a, b) => compareTitles(a.album ?? '', b.album ?? '') || (a.item?.track ?? 1e9) - (b.item?.track ?? 1e9),
};
export const SORT_CAPABILITIES = Object.keys(SORT_KEYS).join(',');
export const SEARCH_CAPABILITIES = SEARCH_PROPERTIES.join(',');

type Out = Record<string, string | number>;

/** A ui4 argument; 402 when it is not one. */
function ui4Arg(args: Record<string, string>, name: string): number {
  const v = args[name].trim();
  if (!/^\d{1,10}$/.test(v) || Number(v) > 0xffffffff) throw new UpnpError('InvalidArgs', `${name} must be an unsigned integer`);
  return Number(v);
}

function boundedArg(args: Record<string, string>, name: string, max: number): string {
  const v = args[name];
  if (v.length > max) throw new UpnpError('InvalidArgs', `${name} is longer than ${max} characters`);
  return v;
}

/** The comparator of a SortCriteria ("+dc:title,-upnp:artist"); undefined for none; 709 for what it cannot sort by. */
export function sortOf(criteria: string): ((a: TreeObject, b: TreeObject) => number) | undefined {
  const parts = criteria
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  if (!parts.length) return undefined;
  if (parts.length > 8) throw new UpnpError('UnsupportedSortCriteria', 'at most 8 sort keys');
  const keys = parts.map((p) => {
    const dir = p[0] === '-' ? -1 : 1;
    const name = p[0] === '-' || p[0] === '+' ? p.slice(1) : p;
    const key = SORT_KEYS[name];
    if (!key) throw new UpnpError('UnsupportedSortCriteria', `cannot sort by ${name.slice(0, 64)}`);
    return { dir, key };
  });
  return (a, b) => {
    for (const { dir, key } of keys) {
      const c = key(a, b);
      if (c) return dir * c;
    }
    return 0;
  };
}

export class ContentDirectory {
  private tree?: LibraryTree;
  private treeVersion = -1;
  private treeSource?: MediaItem[];

  constructor(
    private readonly library: LibraryAccess,
    /** The art URL of an item (served by the DLNA HTTP server). */
    private readonly artUrl: (item: MediaItem) => string,
  ) {}

  /** The SystemUpdateID: the library's version (up by one per rescan). */
  get updateId(): number {
    return Math.max(1, this.library.catalog.version ?? 1);
  }

  /** The tree of the library as it is now (rebuilt after a rescan). */
  current(): LibraryTree {
    const version = this.library.catalog.version;
    if (this.tree && version !== undefined && version === this.treeVersion) return this.tree;
    const items = this.library.catalog.list();
    // A catalog without versions: rebuilt when its list changes.
    if (this.tree && version === undefined && this.treeSource && sameList(this.treeSource, items)) return this.tree;
    this.tree = new LibraryTree(items);
    this.treeVersion = version ?? -1;
    this.treeSource = items;
    return this.tree;
  }

  act(action: string, args: Record<string, string>): Out {
    switch (action) {
      case 'GetSearchCapabilities':
        return { SearchCaps: SEARCH_CAPABILITIES };
      case 'GetSortCapabilities':
        return { SortCaps: SORT_CAPABILITIES };
      case 'GetSystemUpdateID':
        return { Id: this.updateId };
      case 'Browse':
        return this.browse(args);
      case 'Search':
        return this.search(args);
      default:
        throw new UpnpError('InvalidAction');
    }
  }

  private browse(args: Record<string, string>): Out {
    const id = boundedArg(args, 'ObjectID', MAX_ID_CHARS).trim();
    const flag = args.BrowseFlag.trim();
    const filter = new DidlFilter(boundedArg(args, 'Filter', MAX_FILTER_CHARS));
    const start = ui4Arg(args, 'StartingIndex');
    const count = ui4Arg(args, 'RequestedCount');
    const sort = sortOf(boundedArg(args, 'SortCriteria', MAX_SORT_CHARS));
    const tree = this.current();
    if (flag === 'BrowseMetadata') {
      const o = tree.object(id);
      if (!o) throw new UpnpError('NoSuchObject', `no object ${id.slice(0, 64)}`);
      if (start !== 0) throw new UpnpError('InvalidArgs', 'StartingIndex must be 0 for BrowseMetadata');
      return this.page([o], 0, 1, filter);
    }
    if (flag !== 'BrowseDirectChildren') throw new UpnpError('InvalidArgs', 'BrowseFlag must be BrowseMetadata or BrowseDirectChildren');
    let children = tree.children(id);
    if (!children) throw new UpnpError('NoSuchObject', `no container ${id.slice(0, 64)}`);
    if (sort) children = [...children].sort(sort);
    return this.page(children, start, count, filter);
  }

  private search(args: Record<string, string>): Out {
    const id = boundedArg(args, 'ContainerID', MAX_ID_CHARS).trim();
    const filter = new DidlFilter(boundedArg(args, 'Filter', MAX_FILTER_CHARS));
    const start = ui4Arg(args, 'StartingIndex');
    const count = ui4Arg(args, 'RequestedCount');
    const sort = sortOf(boundedArg(args, 'SortCriteria', MAX_SORT_CHARS));
    let criteria;
    try {
      criteria = parseSearchCriteria(args.SearchCriteria);
    } catch (e) {
      if (e instanceof SearchCriteriaError) throw new UpnpError('UnsupportedSearchCriteria', e.message);
      throw e;
    }
    const tree = this.current();
    const container = tree.object(id);
    if (!container) throw new UpnpError('NoSuchObject', `no object ${id.slice(0, 64)}`);
    if (container.item) throw new UpnpError('NoSuchContainer', `${id.slice(0, 64)} is an item`);
    const scope = tree.descendants(id) ?? [];
    const found = scope.filter((o) => matchesCriteria(criteria, searchable(o)));
    if (sort) found.sort(sort);
    return this.page(found, start, count, filter);
  }

  private page(objects: TreeObject[], start: number, requested: number, filter: DidlFilter): Out {
    const count = requested === 0 ? MAX_PAGE : Math.min(requested, MAX_PAGE);
    const slice = objects.slice(start, start + count);
    return {
      Result: didlDocument(slice.map((o) => didlObject(this.didl(o), filter))),
      NumberReturned: slice.length,
      TotalMatches: objects.length,
      UpdateID: this.updateId,
    };
  }

  private didl(o: TreeObject): DidlObject {
    const d: DidlObject = { id: o.id, parentId: o.parentId, title: o.title, upnpClass: o.upnpClass, artist: o.artist, album: o.album };
    if (o.childCount !== undefined) d.container = { childCount: o.childCount, searchable: true };
    if (o.coverItem) d.albumArtUri = this.artUrl(o.coverItem);
    const item = o.item;
    if (item) {
      d.trackNumber = item.track;
      d.res = {
        url: this.library.itemUrl(item),
        protocolInfo: protocolInfoOf(item.contentType),
        ...(item.duration > 0 ? { duration: item.duration } : {}),
      };
    }
    return d;
  }
}

/** http-get protocolInfo of a MIME type, with the DLNA flags the media server answers with (byte seeks, streaming). */
export function protocolInfoOf(mime: string): string {
  return `http-get:*:${mime}:DLNA.ORG_OP=01;DLNA.ORG_CI=0;DLNA.ORG_FLAGS=01700000000000000000000000000000`;
}

function sameList(a: MediaItem[], b: MediaItem[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
