import { z } from 'zod';
import { DeviceIDParam, ResultResponse, VolumeParam } from './schemas';
import { define, EXAMPLE, ok } from './define';

export const volume = [
  define({
    name: 'get_volume',
    group: 'volume',
    summary: 'The average volume of the available speakers, rounded half up.',
    response: z.object({ Volume: z.string().regex(/^\d+$/) }),
    handler: (hub) => ({ Volume: String(hub.volume.average()) }),
  }),
  define({
    name: 'get_volume_device',
    group: 'volume',
    summary: "One speaker's volume.",
    params: z.object({ DeviceID: DeviceIDParam }),
    response: z.object({ Volume: z.string().regex(/^\d+$/) }),
    example: { DeviceID: EXAMPLE.deviceId },
    handler: (hub, p) => ({ Volume: String(hub.volume.of(p.DeviceID)) }),
  }),
  define({
    name: 'set_volume',
    group: 'volume',
    summary: 'Sets every available speaker to Volume (0–50).',
    params: z.object({ Volume: VolumeParam }),
    response: ResultResponse,
    example: { Volume: '25' },
    handler: async (hub, p) => {
      await hub.volume.setAll(p.Volume);
      return ok;
    },
  }),
  define({
    name: 'set_volume_device',
    group: 'volume',
    summary: 'Sets one speaker to Volume (0–50).',
    params: z.object({ DeviceID: DeviceIDParam, Volume: VolumeParam }),
    response: ResultResponse,
    example: { DeviceID: EXAMPLE.deviceId, Volume: '25' },
    handler: async (hub, p) => {
      await hub.volume.set(p.DeviceID, p.Volume);
      return ok;
    },
  }),
];
