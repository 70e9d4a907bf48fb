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

/** Old topic names a renamed speaker keeps answering on, at most this many per speaker (the oldest go first). */
export const MAX_ALIASES = 4;

/**
 * Topic names of speakers, derived from their device names, unique, and kept in the data
 * folder: a speaker keeps its topic across restarts, and a name is never handed to another
 * speaker while its owner is known. A speaker whose name changes for good (a squeezelite is
 * "Squeezebox 04:53" until it tells its own name) follows it (follow()): its old names stay
 * aliases that still reach it (set/get), so automations written for them keep working.
 */
export class FriendlyNames {
  private readonly byId = new Map<string, string>();
  private readonly byName = new Map<string, string>();
  /** Old names of renamed speakers → DeviceID (insertion order: oldest first). */
  private readonly aliases = new Map<string, string>();
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
      const aliases = saved.aliases;
      if (aliases && typeof aliases === 'object') {
        for (const [alias, id] of Object.entries(aliases as Record<string, unknown>)) {
          if (typeof id === 'string' && this.byId.has(id) && !this.byName.has(alias)) this.aliases.set(alias, id);
        }
      }
    } catch {
      /* first start */
    }
  }

  /** The speaker's name, assigning one on first sight. */
  nameOf(deviceId: string, deviceName: string): string {
    const known = this.byId.get(deviceId);
    if (known) return known;
    const name = this.free(slug(deviceName), deviceId);
    this.set(deviceId, name);
    this.save();
    return name;
  }

  /** True when the speaker's topic name is not (a numbered form of) its device name's: follow() would rename it. */
  differs(deviceId: string, deviceName: string): boolean {
    const current = this.byId.get(deviceId);
    if (current === undefined) return false;
    const base = slug(deviceName);
    return current !== base && !new RegExp(`^${base}_\\d+$`).test(current);
  }

  /**
   * The speaker's topic name follows its device name: renamed when differs(), the old name kept
   * as an alias (answering set/get). Returns the name, and the old one when it changed.
   */
  follow(deviceId: string, deviceName: string): { name: string; from?: string } {
    const current = this.byId.get(deviceId);
    if (current === undefined) return { name: this.nameOf(deviceId, deviceName) };
    if (!this.differs(deviceId, deviceName)) return { name: current };
    // One of its own old names comes back as its name; another speaker's (name or alias) is never taken.
    const name = this.free(slug(deviceName), deviceId);
    this.byName.delete(current);
    this.aliases.delete(name);
    this.aliases.set(current, deviceId);
    this.set(deviceId, name);
    const own = [...this.aliases].filter(([, id]) => id === deviceId);
    for (const [alias] of own.slice(0, Math.max(0, own.length - MAX_ALIASES))) this.aliases.delete(alias);
    this.save();
    return { name, from: current };
  }

  /** The current name of the speaker an old name (alias) belonged to, when `segment` is one. */
  movedTo(segment: string): string | undefined {
    const id = this.aliases.get(segment);
    return id === undefined ? undefined : this.byId.get(id);
  }

  /** base, or base_2, base_3 …: the first not held by another speaker (as its name or an alias). */
  private free(base: string, deviceId: string): string {
    const taken = (n: string) => {
      const owner = this.byName.get(n) ?? this.aliases.get(n);
      return owner !== undefined && owner !== deviceId;
    };
    let name = base;
    for (let n = 2; taken(name) || RESERVED.has(name) || /^\d+$/.test(name); n++) name = `${base}_${n}`;
    return name;
  }

  /** A DeviceID for a topic segment: a friendly name or the DeviceID itself. */
  resolve(segment: string): string | undefined {
    return this.byName.get(segment) ?? this.aliases.get(segment) ?? (this.byId.has(segment) ? segment : undefined);
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
    for (const [alias, id] of [...this.aliases]) if (id === deviceId) this.aliases.delete(alias);
    this.save();
  }

  private set(id: string, name: string): void {
    this.byId.set(id, name);
    this.byName.set(name, id);
  }

  private save(): void {
    const saved: Record<string, unknown> = Object.fromEntries(this.byId);
    if (this.aliases.size) saved.aliases = Object.fromEntries(this.aliases);
    const json = `${JSON.stringify(saved, null, 2)}\n`;
    this.saving = this.saving
      .then(() => writeFile(this.file, json))
      .catch((e: Error) => this.logger.warn({ err: e.message }, 'could not save MQTT speaker names'));
  }

  flush(): Promise<void> {
    return this.saving;
  }
}
