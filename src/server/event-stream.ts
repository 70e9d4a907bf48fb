import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ExtensionContext } from '../extensions/extension';

const HEARTBEAT_MS = 25_000;

/**
 * Server-sent events: the core's events pushed to automations (beyond the spec, whose REST
 * modes only poll). Each event is `event: <name>` with a JSON `data:` line. Events arrive
 * through the hub's bounded wire-event feed: a client whose queue overflows is closed.
 */
export function streamEvents(ctx: ExtensionContext, req: FastifyRequest, reply: FastifyReply, corsOrigin: string): void {
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
  res.write(`: SpeakerHub ${ctx.uuid}\n\n`);
  // The current playback state comes first (initial), so a client needs no separate poll to start.
  const subscription = ctx.subscribe((e) => res.write(`event: ${e.type}\ndata: ${JSON.stringify(e.data)}\n\n`), {
    initial: true,
    onOverflow: () => res.destroy(),
  });
  const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), HEARTBEAT_MS);
  heartbeat.unref();
  const close = () => {
    clearInterval(heartbeat);
    subscription.close();
  };
  req.raw.on('close', close);
  res.on('error', close);
}
