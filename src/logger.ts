import pino, { type Logger } from 'pino';
import { redactText } from './redact';

export type { Logger };
// The redaction helpers live in one place (src/redact.ts); re-exported for existing callers.
export { redactUrl, maskToken } from './redact';

export interface LoggerOptions {
  level?: string;
  /** A destination stream (tests capture logs through it). */
  stream?: NodeJS.WritableStream;
}

/**
 * Every finished log line passes through redactText() before it is written, so a secret in
 * any field (a URL in an error message, a driver's fault text) is caught whichever module
 * logged it; the pino paths below additionally drop fields that are secrets as a whole.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const opts = {
    level: options.level ?? 'info',
    base: { name: 'speakerhub' },
    redact: {
      paths: ['token', 'password', 'key', 'apiKey', 'authorization', '*.token', '*.password', '*.key', '*.apiKey', 'req.headers.authorization', 'config.token', 'config.tts.voicerss.key', 'config.server.token'],
      censor: '[redacted]',
    },
  };
  return pino(opts, redacting(options.stream ?? pino.destination(1)));
}

/** A log destination that redacts every line (src/redact.ts) before it reaches `target`. */
export function redacting(target: { write(s: string): unknown }): pino.DestinationStream {
  return { write: (line: string) => void target.write(redactText(line)) };
}
