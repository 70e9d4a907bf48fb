import type { Database } from '../storage/database';
import { first } from '../storage/database';
import { digest, newSecret } from '../secrets';

/**
 * Hub link tokens: what `speakerhub account signin` obtains and keeps in the hub's data
 * folder, and what the hub presents when it opens its link. One per sign-in; they do not
 * expire (a hub runs unattended for years) and are stored as digests.
 */
export class LinkTokens {
  constructor(private readonly db: Database) {}

  async create(userId: string): Promise<string> {
    const token = newSecret();
    await this.db.run('INSERT INTO link_tokens (token_hash, user_id, created_at) VALUES ($1, $2, $3)', [digest(token), userId, Date.now()]);
    return token;
  }

  /**
   * Deletes every link token of the user but `keep` (a token leaked with a hub's data folder,
   * or a hub given away): links opened with them are closed by the caller. The count deleted.
   */
  async revokeOthers(userId: string, keep: string): Promise<number> {
    return this.db.run('DELETE FROM link_tokens WHERE user_id = $1 AND token_hash <> $2', [userId, digest(keep)]);
  }

  async user(token: string): Promise<string | undefined> {
    return (await first<{ user_id: string }>(this.db, 'SELECT user_id FROM link_tokens WHERE token_hash = $1', [digest(token)]))?.user_id;
  }
}
