import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { sampleMediaDir } from '../media/sample-location';
import { sampleFileNames } from '../media/samples';

/**
 * The sample tracks as plain web media, without a token: `GET /samples/<file>.wav`. They are
 * generated tones (nothing private), and they give every default hub a web URL that exists
 * — for the docs' play_web_media examples and for trying web media without the Internet.
 * Only the sample file names are served.
 */
export const SAMPLE_ROUTE = '/samples/:file';

export function registerSampleRoute(app: FastifyInstance, dataDir: string): void {
  const names = new Set(sampleFileNames());
  app.get(SAMPLE_ROUTE, async (req, reply) => {
    const { file } = req.params as { file: string };
    if (!names.has(file)) {
      return reply.code(404).send({
        Result: 'false',
        ErrorCode: 'MediaNotFound',
        ErrorMessage: `No sample named ${JSON.stringify(file.slice(0, 80))}; there are: ${[...names].join(', ')}.`,
      });
    }
    const path = join(await sampleMediaDir(dataDir), file);
    const { size } = await stat(path);
    reply.header('Content-Type', 'audio/wav').header('Content-Length', size).header('Cache-Control', 'public, max-age=3600');
    return reply.send(createReadStream(path));
  });
}
