import { OPERATIONS, type Operation } from '../operations/table';
import { hubOf } from './config-node';
import { mergeParams, operationParams, validateParams } from './params';
import type { NodeRedApi, RedNode } from './red-types';

export const CATEGORY = 'SpeakerHub';

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
      let failed = false;
      const errorOutput = config.errorOutput === true;
      this.on('input', (msg, send, done) => {
        const hub = hubOf(RED, config.hub);
        const fail = (e: unknown) => {
          failed = true;
          const code = (e as { code?: string }).code ?? 'InternalError';
          const message = e instanceof Error ? e.message : String(e);
          this.status({ fill: 'red', shape: 'ring', text: code });
          if (!errorOutput) return done(e instanceof Error ? e : new Error(message));
          // The flow answers the failure itself (an http response, a notification): handled, not thrown.
          msg.payload = { Result: 'false', ErrorCode: code, ErrorMessage: message };
          msg.error = { message, code, source: { id: this.id, type: operationNodeType(op) } };
          send([null, msg]);
          done();
        };
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
              this.status({});
            }
            msg.payload = body;
            send(msg);
            done();
          }, fail)
          .catch((e: unknown) => this.error(e, msg)); // a fault downstream of send(), never an unhandled rejection
      });
    }
    RED.nodes.registerType(operationNodeType(op), OperationNode);
  }
}
