import type { ExtensionContext } from '../extensions/extension';
import type { DispatchResult } from '../operations/dispatch';
import type { WireEvent } from '../extensions/wire-events';
import type { BrokerLink } from './broker-link';
import { announceMessage, eventMessage, networkEvent, parseMessage, responseMessage } from './envelope';
import type { RateLimitedLog } from './rate-limit';
import { runOperation } from '../hub-client/run';
import { SerialQueues } from './serial';

/**
 * The spec's publish/subscribe mode on one MQTT topic: commands in, responses and events
 * out, every operation of the table through the same dispatch as REST.
 */
export class PubsubChannel {
  private readonly order = new SerialQueues();

  constructor(
    private readonly ctx: Pick<ExtensionContext, 'uuid' | 'version' | 'dispatch' | 'run'>,
    private readonly link: Pick<BrokerLink, 'publish'>,
    readonly topic: string,
    private readonly faults: RateLimitedLog,
    /** Told of every failed command, with its parameters (the error event entities). */
    private readonly onError: (op: string, params: Record<string, unknown>, result: DispatchResult) => void = () => undefined,
  ) {}

  /** Synchronous operations are answered on the spot, without a promise round trip. */
  handle(payload: Buffer): Promise<void> | void {
    const m = parseMessage(payload, this.ctx.uuid);
    if (m.kind === 'ignore') return;
    if (m.kind === 'invalid') {
      // Nothing says which hub or operation it was for, so there is nobody to answer.
      this.faults.warn(
        `channel:${m.why}`,
        { topic: this.topic, bytes: payload.length, why: m.why },
        'pubsub: message dropped, it names no operation',
      );
      return;
    }
    const answer = (result: DispatchResult): void => {
      if (!result.ok) this.onError(m.command, m.params, result);
      const session = result.ok && m.command === 'init_session' ? String(result.body.SessionToken) : m.sessionToken;
      this.send(responseMessage(this.ctx.uuid, m.command, session, result, m.transaction), 1);
    };
    // A session's commands are carried out in the order they were sent.
    return this.order.run(`session:${m.sessionToken}`, () => {
      const result = runOperation(this.ctx, m.command, m.params);
      if (result instanceof Promise) return result.then(answer);
      answer(result);
    });
  }

  event(e: WireEvent): void {
    const msg = eventMessage(this.ctx.uuid, e);
    // Time ticks come each second and the next supersedes a lost one: QoS 0.
    if (msg) this.send(msg, e.type === 'playbackTime' ? 0 : 1);
  }

  /** On every connect: after an outage first the spec's NetworkUnavailable, then the announcement. */
  announce(reconnect: boolean): void {
    if (reconnect) this.send(networkEvent(this.ctx.uuid, 'Restored'), 1);
    this.send(announceMessage(this.ctx.uuid, this.ctx.version), 1);
  }

  /** The host lost its LAN addresses or got them back (the broker link may never have dropped). */
  network(state: 'Lost' | 'Restored'): void {
    this.send(networkEvent(this.ctx.uuid, state), 1);
  }

  private send(msg: Record<string, unknown>, qos: 0 | 1): void {
    this.link.publish(this.topic, JSON.stringify(msg), { qos });
  }
}
