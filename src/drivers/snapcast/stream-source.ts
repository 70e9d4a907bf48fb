import { parseHostPort, type ResolvedServerConfig } from './config';
import { DEFAULT_SAMPLE_FORMAT } from './feeder';
import type { ServerModel } from './model';
import { parseSource, DEFAULT_TCP_SOURCE_PORT, type SourceAddress } from './sink';

/** Where to write the hub's PCM and in which format: configured, else read from the stream's URI. */
export function streamSource(server: ResolvedServerConfig, model: ServerModel): { source: SourceAddress; format: string } {
  const stream = model.streams.get(server.stream);
  if (!stream) {
    throw new Error(
      `snapserver ${server.address} has no stream '${server.stream}'; declare one in snapserver.conf, e.g. ` +
        `source = tcp://0.0.0.0:${DEFAULT_TCP_SOURCE_PORT}?name=${server.stream}&mode=server`,
    );
  }
  const format = stream.uri.query?.sampleformat ?? DEFAULT_SAMPLE_FORMAT;
  if (server.source) return { source: parseSource(server.source), format };
  const { scheme, host, path, query } = stream.uri;
  if (scheme === 'pipe') return { source: { kind: 'pipe', path }, format };
  if (scheme === 'tcp' && query?.mode === 'server') {
    const hp = parseHostPort(host || '0.0.0.0', DEFAULT_TCP_SOURCE_PORT);
    // A wildcard bind is reached at the address the control connection uses.
    const reach = ['0.0.0.0', '::', '', '*'].includes(hp.host) ? server.host : hp.host;
    return { source: { kind: 'tcp', host: reach, port: hp.port }, format };
  }
  throw new Error(
    `stream '${server.stream}' on ${server.address} is a ${scheme} source the hub cannot write to; ` +
      'use a tcp source with mode=server or a pipe source',
  );
}
