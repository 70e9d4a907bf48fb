/** The hub link's frames are validated by zod at both ends; anything else is dropped, never trusted. */
import { parseHubToCloud, parseLinkRequest } from '../../src/protocols/cloud-link';

test('requests from the cloud: a valid one parses (params default to {}); malformed ones are dropped', () => {
  expect(parseLinkRequest('{"t":"req","id":7,"op":"device_count","params":{"SessionToken":"x"}}')).toEqual({
    t: 'req',
    id: 7,
    op: 'device_count',
    params: { SessionToken: 'x' },
  });
  expect(parseLinkRequest('{"t":"req","id":8,"op":"device_count"}')?.params).toEqual({});
  for (const bad of [
    'not json',
    '[]',
    'null',
    '{"t":"req","id":"7","op":"x"}',
    '{"t":"req","id":-1,"op":"x"}',
    '{"t":"req","id":1,"op":""}',
    '{"t":"res","id":1}',
    `{"t":"req","id":1,"op":"${'x'.repeat(101)}"}`,
    '{"t":"req","id":1,"op":"x","params":[1]}',
  ])
    expect(parseLinkRequest(bad)).toBeUndefined();
});

test('frames from the hub: hello, success and error answers parse; malformed ones are dropped', () => {
  expect(parseHubToCloud('{"t":"hello","uuid":"u-1","version":"0.1.0"}')).toEqual({ t: 'hello', uuid: 'u-1', version: '0.1.0' });
  expect(parseHubToCloud('{"t":"res","id":3,"ok":true,"body":{"DeviceCount":"3"}}')).toEqual({
    t: 'res',
    id: 3,
    ok: true,
    body: { DeviceCount: '3' },
  });
  expect(parseHubToCloud('{"t":"res","id":4,"ok":false,"error":{"code":"DeviceNotFound","message":"no such speaker"}}')).toMatchObject({
    ok: false,
    error: { code: 'DeviceNotFound' },
  });
  for (const bad of [
    '{"t":"hello","uuid":5}',
    '{"t":"res","id":3,"ok":"yes"}',
    '{"t":"res","id":4,"ok":false,"error":{"message":"no code"}}',
    '{"t":"res","ok":true,"body":{}}',
    '{"t":"other"}',
  ])
    expect(parseHubToCloud(bad)).toBeUndefined();
});
