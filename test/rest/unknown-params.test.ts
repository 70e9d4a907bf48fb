/**
 * A parameter the hub does not know never widens what a command does: it is refused with
 * InvalidParameter naming it, and a "did you mean" where one of the operation's own is close.
 * Free text keeps its unencoded `&` (old clients), but a parameter-shaped name after Text starts
 * a parameter of its own, so a guessed one cannot be spoken to every speaker either.
 */
import { startHub, type TestHub, TEST_TOKEN } from '../helpers/hub';

let t: TestHub;
let ids: string[];
beforeAll(async () => {
  t = await startHub({ speakers: { virtual: { count: 2, names: ['Kitchen', 'Office'] } } });
  ids = (await t.op('device_list')).DeviceList.map((d: { DeviceID: string }) => d.DeviceID);
});
afterAll(async () => {
  await t?.close();
});

/** GET with the query written as a client writes it (nothing encoded for it). */
const raw = (op: string, query: string) => t.get(`/api/v1/${op}?SessionToken=${t.session}&${query}`, { Authorization: `Bearer ${TEST_TOKEN}` });

test('a guessed DeviceName on announce is refused (before or after Text), and nothing is announced', async () => {
  const announced: string[] = [];
  t.hub.core.events.on('announcement', (e) => announced.push(e.announcementId));
  for (const query of ['DeviceName=Kitchen&Text=hello', 'Text=hello&DeviceName=Kitchen', 'Text=hello%20there&DeviceName=Kitchen']) {
    const r = await raw('announce', query);
    expect({ query, status: r.status, code: r.body.ErrorCode, parameter: r.body.Parameter }).toEqual({
      query,
      status: 400,
      code: 'InvalidParameter',
      parameter: 'DeviceName',
    });
    expect(r.body.ErrorMessage).toMatch(/^announce has no parameter "DeviceName"\. It takes Text, MediaUrl, PersistentID, DeviceIDList/);
  }
  expect(announced).toEqual([]);
  expect(t.hub.core.playback.list()).toEqual([]);
});

test('a near miss gets a "did you mean"', async () => {
  const r = await raw('set_volume_device', `DeviceID=${ids[0]}&volume=10`);
  expect(r.status).toBe(400);
  expect(r.body).toMatchObject({ ErrorCode: 'InvalidParameter', Parameter: 'volume' });
  expect(r.body.ErrorMessage).toContain('Did you mean Volume?');
  expect((await t.op('get_volume_device', { DeviceID: ids[0] })).Volume).toBe('20');
  const list = await raw('play_hub_media_selected_speakers', `PersistentID=1&DeviceIDs=${ids[0]}`);
  expect(list.body.ErrorMessage).toContain('Did you mean DeviceIDList?');
});

test('what old clients send still works: unencoded & in free text and URLs, the cache buster, Priority anywhere', async () => {
  // Lower-case pieces after Text are text ("rock & roll=fun"), as before.
  const said = await raw('announce', `DeviceIDList=${ids[0]}&Text=rock & roll=fun`);
  expect(said.status).toBe(200);
  expect(said.body.Result).toBe('true');
  // A web URL keeps its own query, parameter-shaped names included.
  const url = `${t.base}/samples/sample-tone-2-little-waltz.wav?Foo=1&Bar=2`;
  const played = await raw('play_web_media_selected_speakers', `DeviceIDList=${ids[1]}&MediaUrl=${url}`);
  expect(played.body).toEqual({ Result: 'true' });
  expect(t.hub.core.playback.list()[0]).toMatchObject({ url });
  expect((await raw('stop_play', '_=1712345678&Priority=100')).body).toEqual({ Result: 'true' });
});
