import type { ServerResponse } from 'node:http';
import type { ExtensionContext } from '../extensions/extension';
import type { WireEvent } from '../extensions/wire-events';

const HEARTBEAT_MS = 25_000;

/** The feed hands the same event object to every stream: serialize it once, not once per stream. */
const frames = new WeakMap<WireEvent, string>();
function frame(e: WireEvent): string {
  let f = frames.get(e);
  if (f === undefined) {
    f = `event: ${e.type}\ndata: ${JSON.stringify(e.data)}\n\n`;
    frames.set(e, f);
  }
  return f;
}

export interface EventStreamLimits {
  /** Bytes a stream may have waiting in its socket buffer before events queue up. */
  maxBufferedBytes: number;
  /** Events a stream may have waiting (queued + not yet written); beyond this it is closed. */
  maxQueuedEvents: number;
}

/**
 * Server-sent events: the core's events pushed to automations (beyond the spec, whose REST
 * modes only poll). Each event is `event: <name>` with a JSON `data:` line.
 *
 * Backpressure: events come through a bounded asynchronous subscription; while the socket
 * buffer holds more than maxBufferedBytes (the client is not reading), events wait in a
 * bounded queue, and a client that falls maxQueuedEvents behind is disconnected (it can
 * reconnect and start again from the current state, which the stream opens with).
 */
export function streamEvents(
  res: ServerResponse,
  opts: { subscribe: ExtensionContext['subscribe']; uuid: string; corsOrigin: string; limits: EventStreamLimits; onSlow: () => void },
): void {
  res.writeHead(200, {
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-store',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
    // The hijacked reply bypasses @fastify/cors, so the header is set here.
    'Access-Control-Allow-Origin': opts.corsOrigin,
  });
  // A half-dead peer (NAT dropped, laptop asleep) is found by TCP keep-alive, not left open for ever.
  res.socket?.setKeepAlive(true, 30_000);
  res.write(`: SpeakerHub ${opts.uuid}\n\n`);
  const { maxBufferedBytes, maxQueuedEvents } = opts.limits;
  let waiting: string[] = [];
  let closed = false;
  const drop = () => {
    if (closed) return;
    opts.onSlow();
    close();
    res.destroy();
  };
  const flush = () => {
    while (waiting.length && res.writableLength < maxBufferedBytes) res.write(waiting.shift());
  };
  const push = (text: string) => {
    if (closed) return;
    if (!waiting.length && res.writableLength < maxBufferedBytes) {
      res.write(text);
      return;
    }
    if (waiting.length >= maxQueuedEvents) return drop();
    waiting.push(text);
  };
  res.on('drain', flush);
  // initial: the current playback state comes first, so a client needs no separate poll to start.
  const sub = opts.subscribe((e) => push(frame(e)), { maxQueued: maxQueuedEvents, onOverflow: drop, initial: true });
  const heartbeat = setInterval(() => {
    if (!waiting.length) res.write(': keep-alive\n\n');
  }, HEARTBEAT_MS);
  heartbeat.unref();
  function close() {
    if (closed) return;
    closed = true;
    waiting = [];
    clearInterval(heartbeat);
    sub.close();
  }
  res.on('close', close);
  res.on('error', close);
}
