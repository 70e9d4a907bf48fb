import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logger';

/** Names a speaker topic can never take: they are the bridge's own. */
const RESERVED = new Set(['bridge']);

/** "Living Room (2)" → "living_room_2": safe in topics and shell commands, no MQTT wildcards. */
export function slug(name: string): string {
  const s = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 48);
  return s || 'speaker';
}

/**
 * Topic names of speakers, derived from their device names, unique, and stable: the
 * assignment is kept in the data folder, so a speaker keeps its topic across restarts and
 * renames, and a name is never handed to another speaker while its owner is known.
 */
export class FriendlyNames {
  private readonly byId = new Map<string, string>();
  private readonly byName = new Map<string, string>();
  private readonly file: string;
  private saving = Promise.resolve();

  constructor(
    dataDir: string,
    private readonly logger: Logger,
  ) {
    this.file = join(dataDir, 'mqtt-names.json');
    try {
      const saved = JSON.parse(readFileSync(this.file, 'utf8')) as Record<string, unknown>;
      for (const [id, name] of Object.entries(saved)) {
        if (typeof name === 'string' && /^\d+$/.test(id) && !this.byName.has(name)) this.set(id, name);
      }
    } catch {
      /* first start */
    }
  }

  /** The speaker's name, assigning one on first sight. */
  nameOf(deviceId: string, deviceName: string): string {
    const known = this.byId.get(deviceId);
    if (known) return known;
    const base = slug(deviceName);
    let name = base;
    for (let n = 2; this.byName.has(name) || RESERVED.has(name) || /^\d+$/.test(name); n++) name = `${base}_${n}`;
    this.set(deviceId, name);
    this.save();
    return name;
  }

  /** A DeviceID for a topic segment: a friendly name or the DeviceID itself. */
  resolve(segment: string): string | undefined {
    return this.byName.get(segment) ?? (this.byId.has(segment) ? segment : undefined);
  }

  /** Every speaker ever named (kept across restarts): the ones the hub lists no more are its ghosts. */
  knownIds(): string[] {
    return [...this.byId.keys()];
  }

  /** The name a known speaker had, without assigning one. */
  known(deviceId: string): string | undefined {
    return this.byId.get(deviceId);
  }

  /** Forgets a speaker for good: its name may go to another speaker. */
  forget(deviceId: string): void {
    const name = this.byId.get(deviceId);
    if (name === undefined) return;
    this.byId.delete(deviceId);
    this.byName.delete(name);
    this.save();
  }

  private set(id: string, name: string): void {
    this.byId.set(id, name);
    this.byName.set(name, id);
  }

  private save(): void {
    const json = `${JSON.stringify(Object.fromEntries(this.byId), null, 2)}\n`;
    this.saving = this.saving
      .then(() => writeFile(this.file, json))
      .catch((e: Error) => this.logger.warn({ err: e.message }, 'could not save MQTT speaker names'));
  }

  flush(): Promise<void> {
    return this.saving;
  }
}
