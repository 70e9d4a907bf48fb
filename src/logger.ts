import pino, { type Logger } from 'pino';
import { describeError, PrettyLogStream, type LogNames } from './logging/pretty';

export type { Logger };

/** Query parameters and headers whose values are secrets and must never reach a log. */
const SECRET_PARAMS = /([?&](?:SessionToken|SesssionToken|SessionID|access_token|token|key)=)[^&]*/gi;

export function redactUrl(url: string): string {
  return url.replace(SECRET_PARAMS, '$1[redacted]');
}

/** Shows only enough of a token to tell two apart in a log. */
export function maskToken(token: string): string {
  return token.length <= 8 ? '***' : `${token.slice(0, 4)}…(${token.length} chars)`;
}

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

export function createLogger(options: LoggerOptions = {}): Logger {
  const opts = {
    level: options.level ?? 'info',
    base: { name: 'speakerhub' },
    serializers: { err: serializeError },
    redact: {
      paths: ['token', 'password', 'key', 'apiKey', 'authorization', '*.token', '*.password', '*.key', '*.apiKey', 'req.headers.authorization', 'config.token', 'config.tts.voicerss.key'],
      censor: '[redacted]',
    },
  };
  if (options.stream) {
    const dest = options.format === 'pretty' ? new PrettyLogStream(options.stream, options.names ?? {}, false) : options.stream;
    return pino(opts, dest as pino.DestinationStream);
  }
  if (prettyLogs(options.format)) {
    const pretty = new PrettyLogStream(process.stdout, options.names ?? {}, process.stdout.isTTY === true && !process.env.NO_COLOR);
    return pino(opts, pretty);
  }
  return pino(opts);
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
