/**
 * Media URLs are secrets: the hub's carry a capability id (anyone holding one can fetch the
 * file), and web URLs may carry tokens in their path or query. Logs keep only the origin.
 */
export function redactMediaUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}/[redacted]`;
  } catch {
    return '[redacted]';
  }
}
