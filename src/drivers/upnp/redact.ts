/**
 * The UPnP driver's old name for the hub's one redaction rule (src/redact.ts); kept so code
 * written against it still compiles. New code imports redactUrl from '../../redact'.
 */
export { redactUrl as redactMediaUrl } from '../../redact';
