/** The longest a renderer waits for a media server's HEAD answer before it takes the media as live. */
export const LENGTH_CHECK_MS = 3000;

/**
 * Whether a URL serves media of known length (a file: its answer carries a Content-Length),
 * asked with one HEAD when a control point pauses it. The hub keeps no duration for web media,
 * and a Pause is kept as a position to resume at only for a file: a live stream (no length, as
 * radio stations and Home Assistant's chunked TTS answer) has no position to come back to, so
 * its Pause stops it as the spec's pause_play does. Redirects are not followed (the URL the
 * renderer checked at SetAVTransportURI is the one asked); any failure answers false.
 */
export async function hasKnownLength(url: string, timeoutMs = LENGTH_CHECK_MS): Promise<boolean> {
  if (!/^https?:/i.test(url)) return false;
  try {
    const res = await fetch(url, { method: 'HEAD', redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
    // The body of a HEAD answer is empty; nothing to drain.
    if (!res.ok) return false;
    const length = Number(res.headers.get('content-length') ?? '');
    return Number.isSafeInteger(length) && length > 0 && !/chunked/i.test(res.headers.get('transfer-encoding') ?? '');
  } catch {
    return false;
  }
}
