import { OPERATIONS, type Operation } from '../operations/table';
import { hubOf } from './config-node';
import { mergeParams, operationParams, validateParams } from './params';
import type { NodeMessage, NodeRedApi, RedNode } from './red-types';

export const CATEGORY = 'SpeakerHub';
/**
 * The one-node-per-operation types sit in a palette category of their own, so the main one
 * holds what most flows need: the universal `speakerhub` node, announce and events.
 */
export const OPERATIONS_CATEGORY = 'SpeakerHub operations';

/** The Node-RED type of an operation's node. */
export function operationNodeType(op: Operation): string {
  return `speakerhub-${op.name}`;
}

/**
 * Operations whose node is written by hand rather than generated: `announce`'s node
 * (`speakerhub-announce`, announce-node.ts) answers once the announcement is done and the
 * speakers are restored, not at once as the operation does.
 */
export const DEDICATED_NODES: ReadonlySet<string> = new Set(['announce']);

/** Every operation's node type, in table order: the same loop REST routes come from. */
export function operationNodeTypes(): string[] {
  return OPERATIONS.map(operationNodeType);
}

/** The operations whose node the loop below generates. */
export function generatedOperations(): Operation[] {
  return OPERATIONS.filter((op) => !DEDICATED_NODES.has(op.name));
}

/**
 * One node type per operation of the table. A message runs the operation with the node's
 * settings overridden by msg.payload; the response goes out in msg.payload, exactly as REST
 * answers it. A failure shows a red status and, when the node's error output is on (its
 * second output), goes out there with msg.payload the REST error body and msg.error; else it
 * sends nothing and calls node.error(err, msg) (err.code = the operation's error code, which a
 * catch node sees as msg.error.code).
 */
export function registerOperationNodes(RED: NodeRedApi): void {
  for (const op of generatedOperations()) {
    const names = operationParams(op);
    function OperationNode(this: RedNode, config: Record<string, unknown>): void {
      RED.nodes.createNode(this, config);
      const settings: Record<string, unknown> = {};
      for (const n of names) settings[n] = config[n];
      const run = operationRunner(RED, this, config);
      this.on('input', (msg, send, done) => run(op, settings, msg, send, done));
    }
    RED.nodes.registerType(operationNodeType(op), OperationNode);
  }
}

type Send = (msg: NodeMessage | (NodeMessage | null)[]) => void;

/**
 * What every node that runs an operation does with a message (the generated nodes and the
 * universal `speakerhub` node): parameters from its settings overridden by msg.payload,
 * validated by the operation's own schema, run on the config node's hub; the response in
 * msg.payload. A failure shows a red status and goes out of the second output when the node
 * has its error output on (msg.payload the REST error body, msg.error), else to catch nodes.
 */
export function operationRunner(RED: NodeRedApi, node: RedNode, config: Record<string, unknown>) {
  let failed = false;
  const errorOutput = config.errorOutput === true;
  return (op: Operation | Error, settings: Record<string, unknown>, msg: NodeMessage, send: Send, done: (err?: Error) => void): void => {
    const fail = (e: unknown) => {
      failed = true;
      const code = (e as { code?: string }).code ?? 'InternalError';
      const message = e instanceof Error ? e.message : String(e);
      node.status({ fill: 'red', shape: 'ring', text: code });
      if (!errorOutput) return done(e instanceof Error ? e : new Error(message));
      // The flow answers the failure itself (an http response, a notification): handled, not thrown.
      msg.payload = { Result: 'false', ErrorCode: code, ErrorMessage: message };
      msg.error = { message, code, source: { id: node.id, type: node.type } };
      send([null, msg]);
      done();
    };
    if (op instanceof Error) return fail(op);
    const hub = hubOf(RED, config.hub);
    if (hub instanceof Error) return fail(hub);
    let params: Record<string, unknown>;
    try {
      params = mergeParams(op, settings, msg.payload);
      validateParams(op, params);
    } catch (e) {
      return fail(e);
    }
    hub.connection
      .run(op.name, params)
      .then((body) => {
        if (failed) {
          failed = false;
          node.status({});
        }
        msg.payload = body;
        send(msg);
        done();
      }, fail)
      .catch((e: unknown) => node.error(e, msg)); // a fault downstream of send(), never an unhandled rejection
  };
}
