/** The cloud's few web pages: plain HTML, no scripts, readable on a phone. */
export function esc(s: unknown): string {
  return String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

export function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)} · SpeakerHub Cloud</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:0 auto;padding:1rem;color:#1b1b1b;background:#fafafa}
h1{font-size:1.4rem}label{display:block;margin:.8rem 0 .2rem;font-weight:600}
input,textarea{width:100%;box-sizing:border-box;padding:.6rem;font-size:1rem;border:1px solid #767676;border-radius:4px}
button{margin-top:1rem;padding:.6rem 1.2rem;font-size:1rem;border-radius:4px;border:1px solid #0b57d0;background:#0b57d0;color:#fff;cursor:pointer}
button.secondary{background:#fff;color:#0b57d0}.error{color:#b00020;border-left:4px solid #b00020;padding-left:.6rem}
code{background:#eee;padding:.1rem .3rem;border-radius:3px;word-break:break-all}nav a{margin-right:1rem}
</style></head><body><nav><a href="/">Client</a><a href="/account">Account</a><a href="/signup">Sign up</a><a href="/signin">Sign in</a></nav>
<main><h1>${esc(title)}</h1>${body}</main></body></html>`;
}

export function errorLine(message?: string): string {
  return message ? `<p class="error" role="alert">${esc(message)}</p>` : '';
}

export function hidden(fields: Record<string, string | undefined>): string {
  return Object.entries(fields)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `<input type="hidden" name="${esc(k)}" value="${esc(v)}">`)
    .join('');
}

export function signinForm(next: string, error?: string, username = ''): string {
  return `${errorLine(error)}<form method="post" action="/signin">${hidden({ next })}
<label for="username">Username</label><input id="username" name="username" autocomplete="username" required value="${esc(username)}">
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button></form><p>No account? <a href="/signup?next=${encodeURIComponent(next)}">Sign up</a>.</p>`;
}

export function signupForm(next: string, error?: string, v: { username?: string; email?: string } = {}): string {
  return `${errorLine(error)}<form method="post" action="/signup">${hidden({ next })}
<label for="username">Username</label><input id="username" name="username" autocomplete="username" required minlength="2" maxlength="32" pattern="[A-Za-z0-9._\\-]{2,32}" value="${esc(v.username)}" aria-describedby="uhelp">
<small id="uhelp">2–32 letters, digits, “.”, “_” or “-”.</small>
<label for="email">E-mail</label><input id="email" name="email" type="email" autocomplete="email" required value="${esc(v.email)}">
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="new-password" required minlength="10" aria-describedby="phelp">
<small id="phelp">At least 10 characters.</small>
<button type="submit">Sign up</button></form>`;
}
