import { InvalidArgumentError } from 'commander';
import { parseInteger } from './values';

/**
 * Value parsers for command-line flags, shared by the CLI's own flags and those that drivers
 * and front ends contribute: one number rule (util/values.ts), messages that state the range.
 */
export function intFlag(name: string, min: number, max: number) {
  return (v: string): number => {
    const r = parseInteger(v, name, min, max);
    if (!r.ok) throw new InvalidArgumentError(`${r.message}.`);
    return r.value;
  };
}

/** A repeatable flag: each use adds one value. */
export const collect = (v: string, acc: string[] = []): string[] => [...acc, v];
