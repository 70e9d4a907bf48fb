/**
 * The operation table keeps its types (issue 8): names are a union of literals, responses
 * and parameters are typed per operation, in dispatch and in the client. The checks are
 * compile-time (ts-jest type-checks this file: an unused @ts-expect-error fails it too);
 * the runtime part checks that the typed values are the real ones.
 */
import type { z } from 'zod';
import { SpeakerHubClient } from '../../src/rest-client/client';
import { dispatch } from '../../src/operations/dispatch';
import { OPERATIONS, isOperationName, type OperationName, type ParamsOf, type ResponseOf } from '../../src/operations/table';
import { startHub, type TestHub } from '../helpers/hub';
import { TEST_TOKEN } from '../helpers/hub';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const assertType = <T extends true>(_: T) => undefined;

let h: TestHub;
beforeAll(async () => {
  h = await startHub({ speakers: { virtual: { count: 2 } } });
});
afterAll(() => h?.close());

test('names, responses and parameters are typed', async () => {
  assertType<Equal<ResponseOf<'get_volume'>, { Volume: string }>>(true);
  assertType<Equal<ResponseOf<'is_playing'>['IsPlaying'], 'true' | 'false'>>(true);
  assertType<Equal<(typeof OPERATIONS)[number]['name'], OperationName>>(true);
  const name: OperationName = 'play_tts_selected_speakers';
  // @ts-expect-error not an operation
  const bad: OperationName = 'play_tts_everywhere';
  const params: ParamsOf<'set_volume_device'> = { DeviceID: '1', Volume: 3 };
  // @ts-expect-error set_volume takes no DeviceID
  const wrong: ParamsOf<'set_volume'> = { DeviceID: '1' };
  expect([name, bad, params, wrong]).toHaveLength(4);
  expect(OPERATIONS.map((o) => o.name)).toContain(name);
  expect(isOperationName('set_volume')).toBe(true);
  expect(isOperationName('nope')).toBe(false);
});

test('dispatch with a literal name types the body', async () => {
  const r = await dispatch(h.hub.core, 'device_list', { SessionToken: h.session });
  if (!r.ok) throw r.error;
  // A typed access: DeviceList is an array of device records with typed fields.
  const first: z.infer<typeof import('../../src/operations/schemas').DeviceSchema> = r.body.DeviceList[0];
  expect(first.Volume).toBeGreaterThanOrEqual(0);
  // @ts-expect-error device_list has no Volume
  expect(r.body.Volume).toBeUndefined();
});

test('the client: typed call, typed result', async () => {
  const client = new SpeakerHubClient({ baseUrl: h.base, token: TEST_TOKEN });
  const count = await client.call('device_count');
  const n: string = count.DeviceCount;
  expect(n).toBe('2');
  const list = await client.call('device_list');
  const id = list.DeviceList[0].DeviceID;
  expect(await client.call('set_volume_device', { DeviceID: id, Volume: 12 })).toEqual({ Result: 'true' });
  expect((await client.call('get_volume_device', { DeviceID: id })).Volume).toBe('12');
  // @ts-expect-error the client refuses names outside the table at compile time
  await expect(client.call('nope')).rejects.toMatchObject({ code: 'UnknownOperation' });
  await client.close();
});
