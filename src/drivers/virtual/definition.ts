import { z } from 'zod';
import { VOLUME_MAX } from '../../core/volume-range';
import { intFlag } from '../../util/flags';
import { defineDriver } from '../definition';

/**
 * The embedded default: N speakers with realistic device records that play by fetching and
 * timing the media. Its part keeps the historic key `speakers.virtual`.
 */
const VirtualPart = z
  .object({
    virtual: z
      .object({
        /** How many virtual speakers the hub runs. */
        count: z.number().int().min(0).max(10_000).default(3),
        /** Their DeviceNames, in order (at most count; the rest are "Virtual Speaker N"). */
        names: z.array(z.string().min(1)).optional(),
        /** Their volume at start. */
        volume: z.number().int().min(0).max(VOLUME_MAX).default(20),
        /**
         * An announcement whose length a virtual speaker cannot know when it starts (a live
         * stream, a chunked body) stops after this many seconds at the latest (issue 28).
         */
        maxLiveAnnouncementSeconds: z.number().positive().max(86_400).default(600),
        /**
         * The speakers mix an announcement in Mode duck over their music, as a speaker with a
         * native announce does (the playback goes on under it); off: duck falls back to
         * interrupt on them, as on UPnP and MPD.
         */
        mix: z.boolean().default(false),
      })
      .strict()
      .prefault({}),
  })
  .strict()
  .superRefine((p, ctx) => {
    const { count, names } = p.virtual;
    if (names && names.length > count) {
      ctx.addIssue({
        code: 'custom',
        path: ['virtual', 'names'],
        message: `${names.length} names for ${count} virtual speaker(s); give at most ${count} names or raise speakers.virtual.count (--virtual-speakers)`,
      });
    }
  });

export const virtualDriver = defineDriver({
  name: 'virtual',
  summary: 'virtual speakers that fetch and time what they play (the embedded default)',
  configKey: 'speakers',
  configSchema: VirtualPart,
  flags: {
    register: (hub) => void hub.option('--virtual-speakers <n>', 'number of virtual speakers (default 3)', intFlag('--virtual-speakers', 0, 10_000)),
    toConfig: (f) =>
      f.virtualSpeakers === undefined
        ? { part: {}, labels: {} }
        : { part: { virtual: { count: f.virtualSpeakers } }, labels: { 'virtual.count': '--virtual-speakers' } as Record<string, string> },
  },
  load: async () => {
    const { VirtualDriver } = await import('./virtual-driver');
    return (part, deps) =>
      part.virtual.count > 0
        ? new VirtualDriver({
            count: part.virtual.count,
            names: part.virtual.names,
            volume: part.virtual.volume,
            maxLiveAnnouncementSeconds: part.virtual.maxLiveAnnouncementSeconds,
            mix: part.virtual.mix,
            clock: deps.clock,
            version: deps.version,
            logger: deps.logger,
            refuseLocalAddresses: deps.hub.webMedia.refuseLocalAddresses,
          })
        : undefined;
  },
});
