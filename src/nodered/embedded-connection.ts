import type { Logger } from '../logger';
import type { HubConnection } from './connection';

export interface EmbeddedOptions {
  settings: Record<string, unknown>;
  credentials: Record<string, string | undefined>;
  userDir?: string;
  nodeId: string;
  logger: Logger;
}

// Placeholder until the extension contract is merged.
export function createEmbeddedConnection(_options: EmbeddedOptions): HubConnection {
  throw new Error('embedded mode is not available yet');
}
