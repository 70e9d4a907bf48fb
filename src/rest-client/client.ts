import { HubError, type ErrorCode } from '../core/errors';
import { OPERATIONS_BY_NAME, type OperationName, type ParamsOf, type ResponseOf } from '../operations/table';

export interface ClientOptions {
  /** Base URL of a hub's local server, e.g. http://192.168.1.20:8090 */
  baseUrl: string;
  /** The hub's API token (printed when it starts); omit when its auth is off. */
  token?: string;
  timeoutMs?: number;
}

type WireParams = Record<string, string | number | readonly string[] | undefined>;

/**
 * A client for a remote hub's REST API. It knows the operations from the operation table,
 * opens a session on first use and opens a new one once if the hub says SessionNotFound
 * (the hub restarted or the session expired).
 */
export class SpeakerHubClient {
  private session?: Promise<string>;

  constructor(private readonly options: ClientOptions) {}

  /** Runs an operation; resolves with its response body, rejects with a HubError on failure. */
  async call<N extends OperationName>(operation: N, params: ParamsOf<N> = {} as ParamsOf<N>): Promise<ResponseOf<N>> {
    const op = OPERATIONS_BY_NAME.get(operation);
    if (!op) throw new HubError('UnknownOperation', `There is no operation named ${operation}.`);
    return (await this.callRemote(operation, params as WireParams, { needsSession: op.needsSession })) as ResponseOf<N>;
  }

  /**
   * Runs an operation this copy's table may not know (a newer hub's, e.g. announce): the
   * hub answers UnknownOperation (HubError) when it does not have it either.
   */
  async callRemote(operation: string, params: WireParams = {}, options: { needsSession?: boolean } = {}): Promise<Record<string, unknown>> {
    if (options.needsSession === false) return this.request(operation, params);
    try {
      return await this.request(operation, { ...params, SessionToken: await this.sessionToken() });
    } catch (e) {
      if (!(e instanceof HubError) || e.code !== 'SessionNotFound') throw e;
      this.session = undefined;
      return this.request(operation, { ...params, SessionToken: await this.sessionToken() });
    }
  }

  async close(): Promise<void> {
    if (!this.session) return;
    const token = await this.session.catch(() => undefined);
    this.session = undefined;
    if (token) await this.request('close_session', { SessionToken: token }).catch(() => undefined);
  }

  private sessionToken(): Promise<string> {
    this.session ??= this.request('init_session', {}).then((b) => String(b.SessionToken));
    this.session.catch(() => (this.session = undefined));
    return this.session;
  }

  private async request(operation: string, params: WireParams): Promise<Record<string, unknown>> {
    const url = new URL(`/api/v1/${operation}`, this.options.baseUrl);
    for (const [k, v] of Object.entries(params)) {
      if (v !== undefined) url.searchParams.set(k, Array.isArray(v) ? v.join(',') : String(v));
    }
    const res = await fetch(url, {
      headers: this.options.token ? { Authorization: `Bearer ${this.options.token}` } : {},
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 30_000),
    });
    const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    if (body.Result === 'false' || !res.ok) {
      const code = (typeof body.ErrorCode === 'string' ? body.ErrorCode : 'InternalError') as ErrorCode;
      throw new HubError(code, typeof body.ErrorMessage === 'string' ? body.ErrorMessage : `HTTP ${res.status}`);
    }
    return body;
  }
}
