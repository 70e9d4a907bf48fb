import type { FastifyReply, FastifyRequest } from 'fastify';
import type { HubCore } from '../core/hub-core';
import type { HubEvents } from '../core/events';

const EVENT_NAMES: (keyof HubEvents)[] = ['playbackState', 'playbackTime', 'device', 'volume', 'selection', 'announcement'];
const HEARTBEAT_MS = 25_000;

/**
 * Server-sent events: the core's events pushed to automations (beyond the spec, whose REST
 * modes only poll). Each event is `event: <name>` with a JSON `data:` line.
 */
export function streamEvents(hub: HubCore, req: FastifyRequest, reply: FastifyReply, corsOrigin: string): void {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-store',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
    // The hijacked reply bypasses @fastify/cors, so the header is set here.
    'Access-Control-Allow-Origin': corsOrigin,
  });
  res.write(`: SpeakerHub ${hub.uuid}\n\n`);
  const send = (name: string) => (payload: unknown) => res.write(`event: ${name}\ndata: ${JSON.stringify(payload)}\n\n`);
  const listeners = EVENT_NAMES.map((name) => [name, send(name)] as const);
  for (const [name, fn] of listeners) hub.events.on(name, fn as never);
  // The current playback state first, so a client needs no separate poll to start.
  send('playbackState')(hub.playback.snapshot());
  const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), HEARTBEAT_MS);
  heartbeat.unref();
  const close = () => {
    clearInterval(heartbeat);
    for (const [name, fn] of listeners) hub.events.off(name, fn as never);
  };
  req.raw.on('close', close);
  res.on('error', close);
}
