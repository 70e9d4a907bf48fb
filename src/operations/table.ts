import type { z } from 'zod';
import type { Operation } from './define';
import { sessionAndDevices } from './ops-session';
import { plays, resumes, transport } from './ops-playback';
import { volume } from './ops-volume';
import { speakerCommands } from './ops-speaker';
import { announcements } from './ops-announce';

/**
 * THE operation table: every operation of the Speaker Control Service, defined once, by
 * group (ops-session, ops-playback, ops-volume, ops-speaker, ops-announce; define.ts holds
 * what they share). REST routes, OpenAPI, the client, and the other front ends are generated
 * from it by a loop.
 */
export { EXAMPLE, type Operation, type OperationContext, type OperationGroup } from './define';

const TABLE = [...sessionAndDevices, ...plays, ...resumes, ...transport, ...volume, ...speakerCommands, ...announcements];

/** Every operation, typed: `OPERATIONS[i].name` is the union of the operation names. */
export const OPERATIONS: readonly (typeof TABLE)[number][] = Object.freeze(TABLE);

/** Lookup by wire name; a front end gets any string from its clients. */
export const OPERATIONS_BY_NAME: ReadonlyMap<string, Operation> = new Map(OPERATIONS.map((o) => [o.name, o as Operation]));

/** The name of an operation in the table. */
export type OperationName = (typeof OPERATIONS)[number]['name'];

/** Each operation's entry by name (a play_* entry stands for its three targets). */
type OperationsByName = { [O in (typeof OPERATIONS)[number] as O['name']]: O };

/** The typed entry of one operation. */
export type OperationOf<N extends OperationName> = OperationsByName[N];

/** What an operation answers on success, as on the wire. */
export type ResponseOf<N extends OperationName> = z.output<OperationOf<N>['response']>;

type KeysOfUnion<T> = T extends unknown ? keyof T : never;

/**
 * An operation's parameters (other than SessionToken) as a client sends them: wire text. The
 * nine play_* entries are built by one loop and share a parameter type, so their names here
 * are the union over that family (the hub still validates each).
 */
export type ParamsOf<N extends OperationName> = { [K in KeysOfUnion<z.input<OperationOf<N>['params']>>]?: string | number | readonly string[] };

export function isOperationName(name: string): name is OperationName {
  return OPERATIONS_BY_NAME.has(name);
}

/** Names of an operation's parameters as they appear on the wire, SessionToken first. */
export function parameterNames(op: Operation): string[] {
  return [...(op.needsSession ? ['SessionToken'] : []), ...Object.keys(op.params.shape)];
}
