import { z } from 'zod';

/** Sign-up rules, shared by the web pages, the JSON API and the CLI (which report the same messages). */
export const USERNAME = z
  .string({ error: 'username is required.' })
  .regex(/^[A-Za-z0-9._-]{2,32}$/, 'username must be 2–32 characters of letters, digits, ".", "_" or "-".');

export const EMAIL = z
  .string({ error: 'email is required.' })
  .max(254, 'email is too long.')
  .regex(/^[^\s@<>()",;:]+@[^\s@<>()",;:]+\.[^\s@<>()",;:.]{2,}$/, 'email does not look like an e-mail address (name@example.org).');

export const MIN_PASSWORD = 10;
const COMMON = new Set([
  'password',
  'password1',
  'password123',
  '1234567890',
  '123456789012',
  'qwertyuiop',
  'letmeinplease',
  'iloveyou123',
  'speakerhub',
  'speakerhub1',
]);

export const PASSWORD = z
  .string({ error: 'password is required.' })
  .max(1024, 'password is too long (at most 1024 characters).')
  .refine((p) => [...p].length >= MIN_PASSWORD, `password is too weak: use at least ${MIN_PASSWORD} characters.`)
  .refine((p) => !COMMON.has(p.toLowerCase()), 'password is too weak: it is one of the most common passwords.')
  .refine((p) => new Set(p).size >= 4, 'password is too weak: it repeats too few different characters.');

export const SIGNUP = z.object({ username: USERNAME, email: EMAIL, password: PASSWORD });

/** The first problem of a failed parse, as one sentence. */
export function firstProblem(error: z.ZodError): { field: string; message: string } {
  const issue = error.issues[0];
  return { field: String(issue.path[0] ?? ''), message: issue.message };
}
