import { HubError } from '../../core/errors';

export interface Named {
  id: string;
  name: string;
}

/**
 * Finds one item by ID or by name: an exact ID, else a name equal ignoring case, else the
 * one name that starts with (or contains) the text. Several candidates or none is an error
 * that lists what there is.
 */
export function resolveOne<T extends Named>(items: readonly T[], text: string, what: string): T {
  const t = text.trim();
  const lower = t.toLowerCase();
  const byId = items.find((i) => i.id === t);
  if (byId) return byId;
  for (const match of [(n: string) => n === lower, (n: string) => n.startsWith(lower), (n: string) => n.includes(lower)]) {
    const found = items.filter((i) => match(i.name.toLowerCase()));
    if (found.length === 1) return found[0];
    if (found.length > 1) {
      throw new HubError(
        'InvalidParameter',
        `"${t}" matches several ${what}s: ${found.map((f) => `${f.name} (${f.id})`).join(', ')}; give more of the name or the ID.`,
      );
    }
  }
  const known = items.map((i) => `${i.name} (${i.id})`).join(', ') || 'none';
  throw new HubError('InvalidParameter', `no ${what} is called "${t}"; there are: ${known}.`);
}

/** A comma-separated list of names or IDs. */
export function resolveMany<T extends Named>(items: readonly T[], list: string, what: string): T[] {
  const out: T[] = [];
  for (const part of list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const found = resolveOne(items, part, what);
    if (!out.includes(found)) out.push(found);
  }
  if (!out.length) throw new HubError('InvalidParameter', `--speakers names no ${what}.`);
  return out;
}
