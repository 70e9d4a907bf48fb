import { HUB_EVENT_NAMES } from '../core/events';
import { hubOf } from './config-node';
import type { NodeRedApi, RedNode } from './red-types';

export const EVENTS_TYPE = 'speakerhub-events';

/** The event names the editor offers; announcement events (announcementStarted, …) are matched by their prefix. */
/** Every event type of the hub (derived from the core's list, so a new event reaches the flows). */
export const EVENT_TOPICS = HUB_EVENT_NAMES;

/** Whether an event passes the node's filter (empty filter: every event). */
export function eventPasses(filter: readonly string[], type: string): boolean {
  if (!filter.length) return true;
  return filter.some((f) => (f === 'announcement' ? type.startsWith('announce') : f === type));
}

/**
 * `speakerhub-events`: the hub's events as messages, msg.topic = the event name and
 * msg.payload = its data (as the SSE stream sends it), filtered by name in the settings.
 */
export function registerEventsNode(RED: NodeRedApi): void {
  function EventsNode(this: RedNode, config: { hub?: string; topics?: unknown }): void {
    RED.nodes.createNode(this, config);
    const filter = Array.isArray(config.topics) ? config.topics.map(String) : [];
    const hub = hubOf(RED, config.hub);
    if (hub instanceof Error) {
      this.status({ fill: 'red', shape: 'ring', text: 'no hub' });
      this.error(hub);
      return;
    }
    this.status({ fill: 'grey', shape: 'ring', text: 'connecting' });
    // The status follows the event stream itself, not the connection's readiness: a remote
    // hub answers operations before its event stream is open, and flows that wait for
    // "listening" must not miss what comes in between.
    const listening = () => this.status({ fill: 'green', shape: 'dot', text: 'listening' });
    const unsubscribe = hub.connection.follow({
      event: (e) => {
        if (eventPasses(filter, e.type)) this.send({ topic: e.type, payload: e.data });
      },
      resync: listening,
      lost: () => this.status({ fill: 'yellow', shape: 'ring', text: 'reconnecting' }),
    });
    hub.connection.ready.catch((e: unknown) => this.status({ fill: 'red', shape: 'ring', text: (e as { code?: string }).code ?? 'error' }));
    this.on('close', (_removed, done) => {
      unsubscribe();
      done();
    });
  }
  RED.nodes.registerType(EVENTS_TYPE, EventsNode);
}
