import { Writable } from 'node:stream';

/** How the pretty log names things the JSON log identifies by number. */
export interface LogNames {
  /** A speaker's name for its DeviceID, if known. */
  device?(id: string): string | undefined;
  /** A media item's title for its PersistentID, if known. */
  media?(id: string): string | undefined;
}

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO ', 40: 'WARN ', 50: 'ERROR', 60: 'FATAL' };
const COLORS: Record<number, string> = { 10: '90', 20: '36', 30: '32', 40: '33', 50: '31', 60: '35' };
/** Fields that hold one speaker's DeviceID, or a list of them (the core and drivers log IDs; a person reads names). */
const SPEAKER_KEYS = new Set(['deviceId', 'DeviceID', 'speaker']);
const SPEAKER_LIST_KEYS = new Set(['deviceIds', 'speakers', 'reserved']);
/** What withSpeakerNames() adds for JSON logs. */
const NAME_KEYS = new Set(['speakerName', 'speakerNames']);

/**
 * For JSON logs (journald, log shippers): the speakers' names next to their IDs, which stay
 * (scripts and tests match on them): `speakerName` for a DeviceID field, `speakerNames` for a list.
 */
export function withSpeakerNames(names: LogNames): (rec: Record<string, unknown>) => Record<string, unknown> {
  return (rec) => {
    const name = names.device;
    if (!name) return rec;
    let out = rec;
    for (const [k, v] of Object.entries(rec)) {
      if (SPEAKER_KEYS.has(k) && typeof v === 'string' && rec.speakerName === undefined) {
        const n = name(v);
        if (n !== undefined) out = { ...out, speakerName: n };
      } else if (SPEAKER_LIST_KEYS.has(k) && Array.isArray(v) && v.length && rec.speakerNames === undefined) {
        out = { ...out, speakerNames: v.map((id) => name(String(id)) ?? String(id)) };
      }
    }
    return out;
  };
}

/** Fields every line has, or that the line's head already shows. */
const HIDDEN = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'v', 'component', 'ext']);

/**
 * What an error was, in one line: its message, its code and what its cause says (fetch()
 * reports only "fetch failed"; the refused address, the DNS failure are in the cause).
 */
export function describeError(e: unknown): string {
  if (e === null || e === undefined) return String(e);
  if (typeof e !== 'object') return String(e);
  const err = e as { message?: unknown; code?: unknown; cause?: unknown; address?: unknown; port?: unknown; hostname?: unknown; syscall?: unknown };
  const head =
    typeof err.message === 'string' && err.message ? err.message : typeof err.code === 'string' ? err.code : JSON.stringify(e).slice(0, 200);
  const parts: string[] = [head];
  const where = [err.hostname, err.address].find((x) => typeof x === 'string');
  const detail = [
    typeof err.code === 'string' && !parts[0].includes(err.code) ? err.code : '',
    where ? `${where}${err.port ? `:${err.port}` : ''}` : '',
  ]
    .filter(Boolean)
    .join(' ');
  if (detail) parts.push(`(${detail})`);
  if (err.cause && err.cause !== e) parts.push(`← ${describeError(err.cause)}`);
  return parts.join(' ');
}

function pad(n: number, w = 2): string {
  return String(n).padStart(w, '0');
}

function value(v: unknown): string {
  if (typeof v === 'string') return /[\s"=]/.test(v) ? JSON.stringify(v) : v;
  return JSON.stringify(v);
}

/**
 * Formats a pino line for a person: `12:04:05.120 WARN  [media] message  key=value`, speakers
 * by name and media by title, errors with their causes. Returns the JSON line unchanged if it
 * is not a pino record.
 */
export function formatLine(line: string, names: LogNames = {}, color = false): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  if (typeof rec !== 'object' || rec === null || typeof rec.level !== 'number') return line;
  const d = new Date(typeof rec.time === 'number' ? rec.time : Date.now());
  const time = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
  const level = LEVELS[rec.level] ?? String(rec.level);
  const head = color ? `\x1b[${COLORS[rec.level] ?? '0'}m${level}\x1b[0m` : level;
  const scope = rec.component ?? rec.ext;
  const fields: string[] = [];
  for (const [k, v] of Object.entries(rec)) {
    if (HIDDEN.has(k) || v === undefined || (k === 'name' && v === 'speakerhub')) continue;
    if (SPEAKER_KEYS.has(k) && typeof v === 'string') fields.push(`speaker=${value(speakerName(v, names))}`);
    else if (SPEAKER_LIST_KEYS.has(k) && Array.isArray(v)) {
      if (!v.length) continue; // "reserved=" says nothing
      fields.push(`${k === 'deviceIds' ? 'speakers' : k}=${value(v.map((id) => speakerName(String(id), names)).join(', '))}`);
    } else if (NAME_KEYS.has(k) && names.device)
      continue; // the JSON log's names for the IDs: shown in their place above
    else if ((k === 'persistentId' || k === 'PersistentID') && typeof v === 'string') fields.push(`media=${value(names.media?.(v) ?? v)}`);
    else if (k === 'err' || k === 'error') fields.push(`error=${value(typeof v === 'string' ? v : describeError(v))}`);
    else fields.push(`${k}=${value(v)}`);
  }
  return `${time} ${head} ${scope ? `[${scope}] ` : ''}${String(rec.msg ?? '')}${fields.length ? `  ${fields.join(' ')}` : ''}\n`;
}

function speakerName(id: string, names: LogNames): string {
  return names.device?.(id) ?? id;
}

/** A destination for pino that writes pretty lines to `out` (a terminal). */
export class PrettyLogStream extends Writable {
  private partial = '';

  constructor(
    private readonly out: NodeJS.WritableStream,
    private readonly names: LogNames,
    private readonly color: boolean,
  ) {
    super();
  }

  override _write(chunk: Buffer | string, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    const text = this.partial + String(chunk);
    const lines = text.split('\n');
    this.partial = lines.pop() ?? '';
    let out = '';
    for (const l of lines) if (l) out += formatLine(l, this.names, this.color);
    if (out) this.out.write(out);
    cb();
  }
}
