import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../logger';
import type { NodeRedApi } from './red-types';

const LEVELS: Record<number, 'error' | 'warn' | 'info' | 'debug'> = { 60: 'error', 50: 'error', 40: 'warn', 30: 'info', 20: 'debug', 10: 'debug' };

/**
 * The hub's pino logger (same redaction of tokens and keys) writing into Node-RED's log, so
 * an embedded hub's lines appear where Node-RED users look, at Node-RED's levels.
 */
export function redLogger(RED: NodeRedApi, prefix: string, level = 'info'): Logger {
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n')) {
        if (!line) continue;
        try {
          const { level: l, msg, time: _t, pid: _p, hostname: _h, name: _n, ...rest } = JSON.parse(line) as Record<string, unknown>;
          const extra = Object.keys(rest).length ? ` ${JSON.stringify(rest)}` : '';
          RED.log[LEVELS[l as number] ?? 'info'](`[${prefix}] ${String(msg ?? '')}${extra}`);
        } catch {
          RED.log.info(`[${prefix}] ${line}`);
        }
      }
      cb();
    },
  });
  return createLogger({ level, stream });
}
