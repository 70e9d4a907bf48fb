import pino, { type Logger } from 'pino';
import { redactText } from './redact';
import { describeError, PrettyLogStream, withSpeakerNames, type LogNames } from './logging/pretty';

export type { Logger };
// The redaction helpers live in one place (src/redact.ts); re-exported for existing callers.
export { redactUrl, maskToken } from './redact';

export interface LoggerOptions {
  level?: string;
  /** A destination stream (tests capture logs through it). */
  stream?: NodeJS.WritableStream;
  /** json (default), pretty, or auto: pretty when stdout is a terminal (a given stream is pretty only with 'pretty'). */
  format?: 'auto' | 'json' | 'pretty';
  /** For pretty logs: speaker names and media titles instead of IDs (the CLI binds them to the hub once it runs). */
  names?: LogNames;
}

/** Whether `format` means pretty output on this stdout. */
export function prettyLogs(format: LoggerOptions['format']): boolean {
  return format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
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
    serializers: { err: serializeError },
    redact: {
      paths: [
        'token',
        'password',
        'key',
        'apiKey',
        'authorization',
        '*.token',
        '*.password',
        '*.key',
        '*.apiKey',
        'req.headers.authorization',
        'config.token',
        'config.tts.voicerss.key',
        'config.server.token',
      ],
      censor: '[redacted]',
    },
  };
  // JSON lines get the speakers' names beside their IDs when the caller can name them (the CLI's hub).
  const json = options.names ? { ...opts, formatters: { log: withSpeakerNames(options.names) } } : opts;
  if (options.stream) {
    if (options.format === 'pretty') return pino(opts, redacting(new PrettyLogStream(options.stream, options.names ?? {}, false)));
    return pino(json, redacting(options.stream));
  }
  if (prettyLogs(options.format)) {
    return pino(opts, redacting(new PrettyLogStream(process.stdout, options.names ?? {}, process.stdout.isTTY === true && !process.env.NO_COLOR)));
  }
  return pino(json, redacting(pino.destination(1)));
}

/** A log destination that redacts every line (src/redact.ts) before it reaches `target`. */
export function redacting(target: { write(s: string): unknown }): pino.DestinationStream {
  return { write: (line: string) => void target.write(redactText(line)) };
}

/** Errors keep their code and cause (fetch's ECONNREFUSED and address live in the cause). */
function serializeError(e: unknown): unknown {
  if (!(e instanceof Error)) return e;
  const out: Record<string, unknown> = { type: e.name, message: e.message, stack: e.stack };
  const extra = e as Error & { code?: unknown; cause?: unknown };
  if (extra.code !== undefined) out.code = extra.code;
  if (extra.cause !== undefined) out.cause = describeError(extra.cause);
  return out;
}
