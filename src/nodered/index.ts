/**
 * The Node-RED nodes' runtime side. Each file in nodes/ calls one of these with Node-RED's
 * RED object; the editor side is nodes/*.html (speakerhub-operations.html is generated from
 * the operation table by scripts/gen-nodered.js).
 */
export { registerConfigNode } from './config-node';
export { registerOperationNodes, operationNodeTypes } from './operation-nodes';
export { registerEventsNode } from './events-node';
export { registerAnnounceNode } from './announce-node';
export { registerUniversalNode } from './universal-node';
