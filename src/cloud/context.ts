import type OAuth2Server from '@node-oauth/oauth2-server';
import type { Clock } from '../core/clock';
import type { Logger } from '../logger';
import type { Accounts } from './accounts/accounts';
import type { Clients } from './accounts/clients';
import type { LinkTokens } from './accounts/link-tokens';
import type { WebSessions } from './accounts/web-sessions';
import type { RateLimiter } from './http/rate-limit';
import type { CodeStore } from './oauth/code-store';
import type { TokenStore } from './oauth/token-store';
import type { HubRegistry } from './relay/hub-registry';
import type { Database } from './storage/database';

/** What the cloud's route modules share. */
export interface CloudContext {
  db: Database;
  accounts: Accounts;
  clients: Clients;
  codes: CodeStore;
  tokens: TokenStore;
  linkTokens: LinkTokens;
  webSessions: WebSessions;
  oauth: OAuth2Server;
  registry: HubRegistry;
  clock: Clock;
  logger: Logger;
  limits: { signinByAddress: RateLimiter; signinByUser: RateLimiter; token: RateLimiter; signup: RateLimiter };
  /** The cloud's origin as browsers and hubs reach it (https in production). */
  publicUrl(): string;
}
