import { eventually } from '../helpers/wait';

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

/** Polls until check() holds on what probe() gives (a positive signal), failing after timeoutMs with the last value. */
export async function until<T>(what: string, probe: () => Promise<T>, check: (v: T) => boolean, timeoutMs = 15_000): Promise<T> {
  let last: T | undefined;
  const held = await eventually(
    async () => {
      last = await probe();
      return check(last) ? { value: last } : undefined;
    },
    timeoutMs,
    () => `${what}; last: ${JSON.stringify(last)?.slice(-1500)}`,
    50,
  );
  return held.value;
}
