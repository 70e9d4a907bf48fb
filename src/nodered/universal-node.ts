import { HubError } from '../core/errors';
import { OPERATIONS_BY_NAME, type Operation } from '../operations/table';
import { operationRunner } from './operation-nodes';
import type { NodeRedApi, RedNode } from './red-types';

/** The universal node's type: one node for every operation (as node-red-contrib-sonos-plus's universal node). */
export const UNIVERSAL_NODE = 'speakerhub';

/**
 * `speakerhub`: runs the operation named by msg.topic, else the one chosen in the editor, with
 * the parameters in msg.payload (an object by API name, or a string for Text/MediaUrl); the
 * response goes out in msg.payload. Failures as the operation nodes handle them (a red status;
 * the second output when the error output is on, else catch nodes).
 */
export function registerUniversalNode(RED: NodeRedApi): void {
  function UniversalNode(this: RedNode, config: Record<string, unknown>): void {
    RED.nodes.createNode(this, config);
    const run = operationRunner(RED, this, config);
    const chosen = typeof config.operation === 'string' ? config.operation : '';
    this.on('input', (msg, send, done) => run(operationFor(msg.topic, chosen), {}, msg, send, done));
  }
  RED.nodes.registerType(UNIVERSAL_NODE, UniversalNode);
}

/** msg.topic when it names an operation, else the editor's choice; neither: UnknownOperation. */
export function operationFor(topic: unknown, chosen: string): Operation | HubError {
  const name = typeof topic === 'string' && OPERATIONS_BY_NAME.has(topic.trim()) ? topic.trim() : chosen;
  const op = name ? OPERATIONS_BY_NAME.get(name) : undefined;
  if (op) return op;
  const given = typeof topic === 'string' && topic ? JSON.stringify(topic.slice(0, 60)) : 'none';
  return new HubError('UnknownOperation', `No operation to run: msg.topic names none (${given}) and the node has none chosen.`);
}
