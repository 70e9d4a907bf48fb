import { randomUUID } from 'node:crypto';
import { first, type Database } from '../storage/database';
import { burnPasswordCheck, hashPassword, verifyPassword } from './password';
import { firstProblem, SIGNUP } from './validation';

export interface User {
  id: string;
  username: string;
  email: string;
}

/** A refused account request, with the field at fault; the web pages, API and CLI show `message`. */
export class AccountError extends Error {
  constructor(
    readonly code: 'invalid_field' | 'username_taken' | 'invalid_credentials',
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'AccountError';
  }
}

/** Usernames are unique regardless of case ("Alice" and "alice" are one account). */
const keyOf = (username: string) => username.toLowerCase();

export class Accounts {
  constructor(private readonly db: Database) {}

  async signup(input: { username?: unknown; email?: unknown; password?: unknown }): Promise<User> {
    const parsed = SIGNUP.safeParse(input);
    if (!parsed.success) {
      const p = firstProblem(parsed.error);
      throw new AccountError('invalid_field', p.message, p.field);
    }
    const { username, email, password } = parsed.data;
    if (await this.byUsername(username)) throw new AccountError('username_taken', `username "${username}" is taken; choose another.`, 'username');
    const user = { id: randomUUID(), username, email };
    const hash = await hashPassword(password);
    try {
      await this.db.run('INSERT INTO users (id, username, username_key, email, password_hash, created_at) VALUES ($1, $2, $3, $4, $5, $6)', [
        user.id,
        username,
        keyOf(username),
        email,
        hash,
        Date.now(),
      ]);
    } catch (e) {
      // Two sign-ups raced for the name: the unique index decided.
      if (await this.byUsername(username)) throw new AccountError('username_taken', `username "${username}" is taken; choose another.`, 'username');
      throw e;
    }
    return user;
  }

  /** The user for a username and password, or an AccountError that does not say which was wrong. */
  async signin(username: unknown, password: unknown): Promise<User> {
    const fail = new AccountError('invalid_credentials', 'Wrong username or password.');
    if (typeof username !== 'string' || typeof password !== 'string' || !username || !password || password.length > 1024) throw fail;
    const row = await first<{ id: string; username: string; email: string; password_hash: string }>(
      this.db,
      'SELECT id, username, email, password_hash FROM users WHERE username_key = $1',
      [keyOf(username)],
    );
    if (!row) {
      await burnPasswordCheck(password);
      throw fail;
    }
    if (!(await verifyPassword(password, row.password_hash))) throw fail;
    return { id: row.id, username: row.username, email: row.email };
  }

  async byId(id: string): Promise<User | undefined> {
    return first<{ id: string; username: string; email: string }>(this.db, 'SELECT id, username, email FROM users WHERE id = $1', [id]);
  }

  private async byUsername(username: string): Promise<User | undefined> {
    return first<{ id: string; username: string; email: string }>(this.db, 'SELECT id, username, email FROM users WHERE username_key = $1', [
      keyOf(username),
    ]);
  }
}
