import pino, { type Logger } from 'pino';

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
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const opts = {
    level: options.level ?? 'info',
    base: { name: 'speakerhub' },
    redact: {
      paths: ['token', 'password', 'key', 'apiKey', 'authorization', '*.token', '*.password', '*.key', '*.apiKey', 'req.headers.authorization', 'config.token', 'config.tts.voicerss.key'],
      censor: '[redacted]',
    },
  };
  return options.stream ? pino(opts, options.stream as pino.DestinationStream) : pino(opts);
}
