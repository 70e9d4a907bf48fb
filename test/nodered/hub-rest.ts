/** A minimal REST caller for checking outcomes on a hub (its own session, like any client). */
export class HubRest {
  private session?: string;
  constructor(
    readonly base: string,
    private readonly token: string,
  ) {}

  async raw(op: string, params: Record<string, string> = {}): Promise<any> {
    const qs = new URLSearchParams(params);
    const res = await fetch(`${this.base}/api/v1/${op}?${qs}`, { headers: { Authorization: `Bearer ${this.token}` } });
    return res.json();
  }

  async op(op: string, params: Record<string, string> = {}): Promise<any> {
    this.session ??= (await this.raw('init_session')).SessionToken as string;
    return this.raw(op, { SessionToken: this.session, ...params });
  }
}

/** Polls until check() holds (a positive signal), failing after timeoutMs. */
export async function until<T>(what: string, probe: () => Promise<T>, check: (v: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: T | undefined;
  let lastErr: unknown;
  for (;;) {
    try {
      last = await probe();
      if (check(last)) return last;
    } catch (e) {
      lastErr = e;
    }
    if (Date.now() > end)
      throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)?.slice(-1500)} ${lastErr ? String(lastErr) : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
