/**
 * The small part of Node-RED's runtime API the nodes use (Node-RED ships no types of its
 * own; @types/node-red lags its majors). Kept structural so both Node-RED 4 and 5 fit.
 */
export interface NodeMessage {
  payload?: unknown;
  topic?: string;
  [key: string]: unknown;
}

export interface NodeStatus {
  fill?: 'red' | 'green' | 'yellow' | 'blue' | 'grey';
  shape?: 'ring' | 'dot';
  text?: string;
}

export interface RedNode {
  readonly id: string;
  readonly type: string;
  name?: string;
  credentials?: Record<string, string | undefined>;
  on(event: 'input', fn: (msg: NodeMessage, send: (msg: NodeMessage | (NodeMessage | null)[]) => void, done: (err?: Error) => void) => void): void;
  on(event: 'close', fn: (removed: boolean, done: () => void) => void): void;
  send(msg: NodeMessage | (NodeMessage | null)[]): void;
  status(status: NodeStatus | Record<string, never>): void;
  error(err: unknown, msg?: NodeMessage): void;
  warn(message: unknown): void;
  log(message: unknown): void;
}

export interface RedRequest {
  params: Record<string, string>;
  query: Record<string, unknown>;
}
export interface RedResponse {
  status(code: number): RedResponse;
  json(body: unknown): void;
}
type Handler = (req: RedRequest, res: RedResponse, next?: () => void) => void;

export interface NodeRedApi {
  nodes: {
    createNode(node: object, config: object): void;
    // Generic: each node's constructor names its own node and settings types.
    registerType<N extends object, C>(
      type: string,
      ctor: (this: N, config: C) => void,
      options?: { credentials?: Record<string, { type: 'text' | 'password' }> },
    ): void;
    getNode(id: string): RedNode | null;
  };
  httpAdmin: { get(path: string, ...handlers: Handler[]): void };
  auth: { needsPermission(permission: string): Handler };
  settings: { userDir?: string; [key: string]: unknown };
  log: { info(m: unknown): void; warn(m: unknown): void; error(m: unknown): void; debug(m: unknown): void };
  version?: () => string;
}
