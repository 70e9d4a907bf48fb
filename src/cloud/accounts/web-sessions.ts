import type { Clock } from '../../core/clock';
import { first, type Database } from '../storage/database';
import { digest, newSecret } from '../secrets';

const WEB_SESSION_MS = 7 * 24 * 3600_000;

/** Sign-ins on the cloud's web pages (a cookie), kept in the database so a restart keeps them. */
export class WebSessions {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  async create(userId: string): Promise<string> {
    const token = newSecret();
    await this.db.run('INSERT INTO web_sessions (token_hash, user_id, expires_at) VALUES ($1, $2, $3)', [
      digest(token),
      userId,
      this.clock.now() + WEB_SESSION_MS,
    ]);
    return token;
  }

  async user(token: string | undefined): Promise<string | undefined> {
    if (!token) return undefined;
    const row = await first<{ user_id: string; expires_at: number }>(this.db, 'SELECT user_id, expires_at FROM web_sessions WHERE token_hash = $1', [
      digest(token),
    ]);
    return row && Number(row.expires_at) > this.clock.now() ? row.user_id : undefined;
  }

  async destroy(token: string): Promise<void> {
    await this.db.run('DELETE FROM web_sessions WHERE token_hash = $1', [digest(token)]);
  }

  /** The form token that proves a POST came from our own page (tied to the session, not stored). */
  static csrf(sessionToken: string): string {
    return digest(`csrf:${sessionToken}`);
  }
}
