import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../logger';
import type { Logging } from './homebridge-api';

const OMIT = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg']);

/**
 * The hub's structured (pino) log written through Homebridge's logger, so its lines carry the
 * plugin's prefix in the Homebridge log and UI. Secrets are redacted by the hub's logger first.
 */
export function hubLoggerFor(log: Logging, level: string): Logger {
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) {
        if (!line) continue;
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          const extra = Object.entries(entry).filter(([k]) => !OMIT.has(k));
          const text = `${String(entry.msg ?? '')}${extra.length ? ` ${JSON.stringify(Object.fromEntries(extra))}` : ''}`;
          const n = Number(entry.level);
          if (n >= 50) log.error(text);
          else if (n >= 40) log.warn(text);
          else if (n >= 30) log.info(text);
          else log.debug(text);
        } catch {
          log.info(line);
        }
      }
      done();
    },
  });
  return createLogger({ level, stream });
}
