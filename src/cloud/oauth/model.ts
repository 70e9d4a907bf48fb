import { randomUUID } from 'node:crypto';
import OAuth2Server, {
  InvalidGrantError,
  InvalidRequestError,
  type AuthorizationCodeModel,
  type PasswordModel,
  type RefreshTokenModel,
} from '@node-oauth/oauth2-server';
import type { Clock } from '../../core/clock';
import { AccountError, type Accounts } from '../accounts/accounts';
import type { Clients } from '../accounts/clients';
import type { CodeStore } from './code-store';
import { FamilyRevokedError, type TokenStore } from './token-store';

export interface ModelDeps {
  accounts: Accounts;
  clients: Clients;
  codes: CodeStore;
  tokens: TokenStore;
  clock: Clock;
}

/**
 * The storage model @node-oauth/oauth2-server runs on. What the library leaves to the
 * model is done here: PKCE is required of public clients, a used refresh token revokes its
 * family (see TokenStore), and refreshing revokes the family's older access tokens.
 *
 * The library compares expiry times with the real `new Date()`; the stores keep them on
 * the injected clock. Times handed to the library are translated ("expires in N ms from
 * now"), so tests move the clock instead of waiting.
 */
export function createModel(d: ModelDeps): AuthorizationCodeModel & PasswordModel & RefreshTokenModel {
  const libDate = (ms: number) => new Date(Date.now() + (ms - d.clock.now()));
  return {
    async getClient(clientId: string, clientSecret: string | null | undefined) {
      // null: the authorization page (no secret involved); undefined: a token request
      // without one, which only public clients may make.
      const c = await d.clients.find(clientId, clientSecret ?? undefined);
      if (!c || (clientSecret === undefined && !c.isPublic)) return false;
      return {
        id: c.id,
        redirectUris: c.redirectUris,
        grants: c.isPublic ? ['authorization_code', 'refresh_token'] : ['password', 'authorization_code', 'refresh_token'],
        isPublic: c.isPublic,
      };
    },

    async getUser(username: string, password: string) {
      try {
        const u = await d.accounts.signin(username, password);
        return { id: u.id };
      } catch (e) {
        if (e instanceof AccountError) return false;
        throw e;
      }
    },

    async saveToken(_token, client, user) {
      let t;
      try {
        t = await d.tokens.issue(user.id as string, client.id, user.familyId as string | undefined, user.codeFamilyId as string | undefined);
      } catch (e) {
        // A refresh racing another refresh (or a replay) of the same family: invalid_grant, not a fault.
        if (e instanceof FamilyRevokedError) throw new InvalidGrantError('Invalid grant: refresh token is invalid');
        throw e;
      }
      return {
        accessToken: t.accessToken,
        accessTokenExpiresAt: libDate(t.accessExpiresAt),
        refreshToken: t.refreshToken,
        refreshTokenExpiresAt: libDate(t.refreshExpiresAt),
        client: { id: client.id, grants: client.grants },
        user: { id: user.id },
      };
    },

    async getAccessToken(accessToken: string) {
      const g = await d.tokens.access(accessToken);
      if (!g) return false;
      return { accessToken, accessTokenExpiresAt: libDate(g.expiresAt), client: { id: g.clientId, grants: [] }, user: { id: g.userId } };
    },

    async saveAuthorizationCode(code, client, user) {
      if (client.isPublic && !code.codeChallenge)
        throw new InvalidRequestError('Missing parameter: `code_challenge` (PKCE with S256 is required of public clients)');
      const expiresAt = await d.codes.save(code.authorizationCode, {
        clientId: client.id,
        userId: user.id as string,
        redirectUri: code.redirectUri,
        codeChallenge: code.codeChallenge ?? null,
        codeChallengeMethod: code.codeChallengeMethod ?? null,
      });
      return { ...code, expiresAt: libDate(expiresAt), client, user };
    },

    async getAuthorizationCode(authorizationCode: string) {
      const c = await d.codes.get(authorizationCode);
      if (!c) return false;
      if (c.usedBy !== null) {
        // A replayed code: whoever holds it may have stolen it, so the tokens it issued go too.
        if (c.usedBy) await d.tokens.revokeFamily(c.usedBy);
        return false;
      }
      return {
        authorizationCode,
        expiresAt: libDate(c.expiresAt),
        redirectUri: c.redirectUri,
        codeChallenge: c.codeChallenge ?? undefined,
        codeChallengeMethod: c.codeChallengeMethod ?? undefined,
        client: { id: c.clientId, grants: [] },
        // The family the code will start, named now: redeeming records it on the code row.
        user: { id: c.userId, codeFamilyId: randomUUID() },
      };
    },

    async revokeAuthorizationCode(code) {
      return d.codes.take(code.authorizationCode, String(code.user.codeFamilyId));
    },

    async getRefreshToken(refreshToken: string) {
      const r = await d.tokens.refresh(refreshToken);
      if (!r) return false;
      return {
        refreshToken,
        refreshTokenExpiresAt: libDate(r.expiresAt),
        client: { id: r.clientId, grants: [] },
        // The family travels with the user to saveToken, which issues the next pair in it.
        user: { id: r.userId, familyId: r.familyId },
      };
    },

    async revokeToken(token) {
      return d.tokens.useRefresh(token.refreshToken);
    },
  } as AuthorizationCodeModel & PasswordModel & RefreshTokenModel;
}

export function createOAuthServer(d: ModelDeps): OAuth2Server {
  return new OAuth2Server({
    model: createModel(d),
    accessTokenLifetime: 3600,
    refreshTokenLifetime: 365 * 24 * 3600,
    authorizationCodeLifetime: 60,
    allowEmptyState: true,
    // Public clients refresh with their client_id alone; confidential ones still send
    // their secret (getClient refuses them without it).
    requireClientAuthentication: { refresh_token: false },
  });
}
