/** One playable item of the hub's media library (hub media). */
export interface MediaItem {
  /** Stable digit string, same file → same ID across restarts. */
  persistentId: string;
  title: string;
  artist: string;
  album: string;
  /** Whole seconds, rounded. */
  duration: number;
  /** Absolute path of the file on the hub. */
  file: string;
  /** MIME type served to speakers, e.g. audio/mpeg. */
  contentType: string;
  /** Track number on its album, when tagged. */
  track?: number;
  /** MIME type of the file's embedded cover (image/jpeg or image/png), when it has one. */
  artwork?: string;
}

/** The read side the core uses; the scanner lives in library.ts. */
export interface MediaCatalog {
  list(): MediaItem[];
  get(persistentId: string): MediaItem | undefined;
  /** Rescans the media folders now (a scan already running is followed by a fresh one). */
  rescan(): Promise<void>;
  /** Goes up by one each time a scan swaps in a new index (the DLNA MediaServer's SystemUpdateID). */
  readonly version?: number;
}

/**
 * The library as a front end may see it (the DLNA MediaServer): the catalog, a stable URL of
 * each item on the hub's media server, and the items' embedded covers.
 */
export interface LibraryAccess {
  readonly catalog: MediaCatalog;
  /** A URL any renderer can fetch the item at, stable while the hub runs (MediaServer.itemUrl). */
  itemUrl(item: MediaItem): string;
  /** Whether a URL is one itemUrl handed out (the hub's own renderers take it though it points at the hub). */
  isItemUrl(url: string): boolean;
  /** The item's embedded cover, bounded in size (undefined: none, or too large). */
  artwork(item: MediaItem): Promise<{ mime: string; data: Buffer } | undefined>;
}

/**
 * Serves local files (hub media, TTS audio) to speakers over HTTP. The URLs it hands out
 * carry an unguessable capability id, so nothing but a URL the hub gave a speaker reaches
 * a file. The core sees only this interface; the HTTP server lives in media-server.ts.
 */
export interface MediaHost {
  /** Returns the URL a speaker fetches the file at. Same file → same URL while it is published. */
  publish(file: string, contentType: string): string;
  /**
   * The URL's playback is over: it stops working after the host's grace period (so a
   * capability a speaker leaked keeps no value), unless retain() or publish() renews it first.
   */
  release?(url: string): void;
  /** The URL is in use again (a playback that took it over started): cancels a pending release. True if it is one of this host's live URLs. */
  retain?(url: string): boolean;
}
