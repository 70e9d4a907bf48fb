import type OAuth2Server from '@node-oauth/oauth2-server';
import type { Clock } from '../core/clock';
import type { Logger } from '../logger';
import type { Accounts } from './accounts/accounts';
import type { Clients } from './accounts/clients';
import type { LinkTokens } from './accounts/link-tokens';
import type { WebSessions } from './accounts/web-sessions';
import type { Limiter } from './http/rate-limit';
import type { SigninGuard } from './accounts/signin-guard';
import type { CodeStore } from './oauth/code-store';
import type { TokenStore } from './oauth/token-store';
import type { HubDirectory, HubRegistry, HubRouter } from './relay/hub-registry';
import type { Database } from './storage/database';

/**
 * The rate limits: sign-in attempts per address, per address and username, per username
 * (whatever the address: guesses spread over many addresses), token requests per address,
 * sign-ups per address, relayed requests per user.
 */
export type LimitName = 'signinByAddress' | 'signinByUser' | 'signinByUsername' | 'token' | 'signup' | 'relay';

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
  /** The hubs linked to this instance. */
  registry: HubRegistry;
  /** Where relayed requests go: the registry alone, or (in a cluster) whichever instance holds the hub's link. */
  router: HubRouter;
  /** A user's linked hubs: this instance's, or (in a cluster) every instance's. */
  hubs: HubDirectory;
  clock: Clock;
  logger: Logger;
  limits: Record<LimitName, Limiter>;
  /** Sign-in attempts: limits per address and per (address, username), backoff, known addresses. */
  signin: SigninGuard;
  /** Closes the user's hub links opened with other link tokens than `keepDigest`'s, on every instance. */
  linksRevoked(userId: string, keepDigest: string): void;
  /** The cloud's origin as browsers and hubs reach it (https in production). */
  publicUrl(): string;
}
