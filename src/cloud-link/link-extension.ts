import WebSocket from 'ws';
import type { ExtensionContext, HubExtension } from '../extensions/extension';
import { CLOSE_AUTH_FAILED, CLOSE_LINK_LIMIT, CLOSE_SHUTDOWN, LINK_PATH, parseLinkRequest, type LinkResponse } from '../protocols/cloud-link';
import { HubError } from '../core/errors';
import type { DispatchResult } from '../operations/dispatch';
import { runOperation } from '../hub-client/run';
import { backoffDelay } from '../util/backoff';
import { CloudAccountError, cloudOrigin, cloudSignin, readCredential, readPasswordFile, saveCredential, type LinkCredential } from './credentials';

export type LinkState = 'connecting' | 'online' | 'offline' | 'stopped';

/** Largest request the cloud may send; requests are one operation's parameters. */
const MAX_PAYLOAD = 1024 * 1024;
/** Requests the hub runs at once for the cloud; beyond, it answers HubBusy (the cloud itself sends at most 256). */
const MAX_IN_FLIGHT = 512;

/**
 * The hub's link to SpeakerHub Cloud (`hub --cloud <url>`): a WebSocket it keeps open, on
 * which the cloud forwards its users' API requests. Each request runs through the hub's
 * operation dispatch, exactly like a local REST request. Pings every heartbeat (a missing
 * pong drops the link), reconnects with capped exponential backoff and jitter, and signs
 * in again when the cloud refuses the link token (with --cloud-username/-password-file).
 */
export class CloudLinkExtension implements HubExtension {
  readonly name = 'cloud-link';
  private ctx?: ExtensionContext;
  private ws?: WebSocket;
  private credential?: LinkCredential;
  private origin = '';
  private password?: string;
  private attempt = 0;
  private timer?: NodeJS.Timeout;
  private heartbeat?: NodeJS.Timeout;
  private _state: LinkState = 'offline';
  private inFlight = 0;
  private readonly listeners = new Set<(s: LinkState) => void>();

  get state(): LinkState {
    return this._state;
  }

  /** Notified on every state change (tests wait for 'online'). */
  onState(fn: (s: LinkState) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  async start(ctx: ExtensionContext): Promise<void> {
    const c = ctx.config.cloud;
    if (!c.url) return;
    this.ctx = ctx;
    const origin = cloudOrigin(c.url);
    if (c.passwordFile) this.password = await readPasswordFile(c.passwordFile);
    this.origin = origin;
    const saved = await readCredential(ctx.config.dataDir);
    if (saved && saved.cloud === origin && (!c.username || c.username.toLowerCase() === saved.username.toLowerCase())) {
      this.credential = saved;
    } else if (c.username && this.password !== undefined) {
      try {
        this.credential = await this.signin(origin);
      } catch (e) {
        // Wrong credentials stop the hub with the cloud's message; an unreachable or failing
        // cloud does not: the hub runs locally and keeps trying.
        if (!(e instanceof CloudAccountError) || (e.status !== 0 && e.status < 500)) throw e;
        ctx.logger.warn({ err: e.message }, 'cloud sign-in failed; the hub runs and keeps trying');
        this.scheduleReconnect(true);
        return;
      }
    } else {
      throw new Error(
        `No cloud sign-in for ${origin} in ${ctx.config.dataDir}: run \`speakerhub account signin --cloud ${origin} --username <name> --data ${ctx.config.dataDir}\` first, or give --cloud-username and --cloud-password-file.`,
      );
    }
    this.connect();
  }

  async stop(): Promise<void> {
    this.setState('stopped');
    clearTimeout(this.timer);
    clearInterval(this.heartbeat);
    const ws = this.ws;
    this.ws = undefined;
    if (ws && ws.readyState === WebSocket.OPEN) {
      await new Promise<void>((resolve) => {
        ws.once('close', () => resolve());
        ws.close(CLOSE_SHUTDOWN, 'hub stopping');
        setTimeout(() => (ws.terminate(), resolve()), 2000).unref();
      });
    } else ws?.terminate();
  }

  /** Drops the link as a network fault would (tests); the hub reconnects by itself. */
  dropLink(): void {
    this.ws?.terminate();
  }

  private async signin(origin: string): Promise<LinkCredential> {
    const c = this.ctx!.config.cloud;
    const cred = await cloudSignin(origin, c.username!, this.password!);
    await saveCredential(this.ctx!.config.dataDir, cred);
    return cred;
  }

  private connect(): void {
    if (this._state === 'stopped' || !this.credential) return;
    this.setState('connecting');
    const url = `${this.credential.cloud.replace(/^http/, 'ws')}${LINK_PATH}`;
    const ws = new WebSocket(url, {
      headers: { authorization: `Bearer ${this.credential.linkToken}` },
      maxPayload: MAX_PAYLOAD,
      handshakeTimeout: 10_000,
      perMessageDeflate: false,
    });
    this.ws = ws;
    let refused = false;
    ws.on('unexpected-response', (_req, res) => {
      refused = res.statusCode === 401;
      this.ctx!.logger.warn({ status: res.statusCode }, refused ? 'the cloud refused the link token' : 'the cloud refused the link');
      ws.terminate();
    });
    ws.on('open', () => {
      this.attempt = 0;
      ws.send(JSON.stringify({ t: 'hello', uuid: this.ctx!.uuid, version: this.ctx!.version }));
      this.startHeartbeat(ws);
      this.setState('online');
      this.ctx!.logger.info({ cloud: this.credential!.cloud }, 'linked to the cloud');
    });
    ws.on('message', (data) => this.onRequest(ws, String(data)));
    ws.on('error', (e) => this.ctx!.logger.debug({ err: e.message }, 'cloud link error'));
    ws.on('close', (code) => {
      if (this.ws !== ws) return;
      clearInterval(this.heartbeat);
      this.ws = undefined;
      if (this._state === 'stopped') return;
      this.noteLimitRefusal(code === CLOSE_LINK_LIMIT);
      this.setState('offline');
      // 4001: the link token was revoked while linked (its owner signed in with --revoke-other-links).
      this.scheduleReconnect(refused || code === CLOSE_AUTH_FAILED);
    });
  }

  private limitRefusals = 0;

  /**
   * The cloud refused this link because the account already holds its maximum of live links:
   * back off as after a failure (the open had reset the count), and tell the owner, once and
   * then every 10th time, since links they did not open mean someone else holds a link token.
   */
  private noteLimitRefusal(refused: boolean): void {
    if (!refused) {
      this.limitRefusals = 0;
      return;
    }
    this.attempt = ++this.limitRefusals;
    if (this.limitRefusals % 10 === 1)
      this.ctx!.logger.warn(
        { refusals: this.limitRefusals },
        'the cloud refused this link: your account already holds its maximum of live hub links. If you do not run that many hubs, someone else holds a link token of yours: `speakerhub account signin --revoke-other-links` on the machine of this hub shuts them out (retrying meanwhile)',
      );
  }

  private scheduleReconnect(reauthenticate: boolean): void {
    const c = this.ctx!.config.cloud;
    const delay = backoffDelay(this.attempt++, c.reconnectBaseMs, c.maxBackoffSeconds * 1000);
    this.timer = setTimeout(() => void this.reconnect(reauthenticate), delay);
    this.timer.unref();
  }

  private async reconnect(reauthenticate: boolean): Promise<void> {
    const c = this.ctx!.config.cloud;
    // `speakerhub account signin` may have saved a new link token meanwhile (after revoking this one): take it.
    if (reauthenticate && this.credential) {
      const saved = await readCredential(this.ctx!.config.dataDir).catch(() => undefined);
      if (this._state === 'stopped') return;
      if (saved && saved.cloud === this.credential.cloud && saved.linkToken !== this.credential.linkToken) {
        this.ctx!.logger.info('using the link token saved by a newer sign-in');
        this.credential = saved;
        return this.connect();
      }
    }
    if (reauthenticate && c.username && this.password !== undefined) {
      this.signin(this.origin).then(
        (cred) => {
          this.credential = cred;
          this.connect();
        },
        (e: Error) => {
          this.ctx!.logger.warn({ err: e.message }, 'cloud sign-in failed; retrying');
          this.scheduleReconnect(true);
        },
      );
    } else {
      if (reauthenticate)
        this.ctx!.logger.error('the cloud refused the saved link token: run `speakerhub account signin` again (retrying meanwhile)');
      this.connect();
    }
  }

  /** A ping each interval; one still unanswered at the next means the link is dead. */
  private startHeartbeat(ws: WebSocket): void {
    let answered = true;
    ws.on('pong', () => (answered = true));
    clearInterval(this.heartbeat);
    this.heartbeat = setInterval(() => {
      if (!answered) return ws.terminate();
      answered = false;
      ws.ping();
    }, this.ctx!.config.cloud.heartbeatSeconds * 1000);
    this.heartbeat.unref();
  }

  private onRequest(ws: WebSocket, text: string): void {
    const req = parseLinkRequest(text);
    if (!req) return; // not a frame of the protocol: dropped
    const params = req.params;
    if (this.inFlight >= MAX_IN_FLIGHT) {
      return this.answer(ws, req.id, {
        ok: false,
        error: new HubError('HubBusy', `The hub is running ${this.inFlight} cloud requests; retry shortly.`),
      });
    }
    // Synchronous operations are answered without a promise round trip, as the local server does.
    const result = runOperation(this.ctx!, req.op, params);
    if (result instanceof Promise) {
      this.inFlight++;
      void result.then((r) => {
        this.inFlight--;
        this.answer(ws, req.id, r);
      });
    } else this.answer(ws, req.id, result);
  }

  private answer(ws: WebSocket, id: number, r: DispatchResult): void {
    const res: LinkResponse = r.ok
      ? { t: 'res', id, ok: true, body: r.body }
      : { t: 'res', id, ok: false, error: { code: r.error.code, message: r.error.message, parameter: r.error.parameter } };
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(res));
  }

  private setState(s: LinkState): void {
    if (this._state === s) return;
    this._state = s;
    for (const fn of this.listeners) fn(s);
  }
}
