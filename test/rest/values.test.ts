/**
 * One rule for values (issue 8): surrounding quotes are stripped from every parameter,
 * Volume and Priority included; integers take an optional sign and leading zeros; a value out
 * of range gets a message stating the range.
 */
import { parseInteger, unquote } from '../../src/util/values';
import { startHub, type TestHub } from '../helpers/hub';

let h: TestHub;
let device: string;
beforeAll(async () => {
  h = await startHub({ speakers: { virtual: { count: 2 } } });
  device = (await h.op('device_list')).DeviceList[0].DeviceID;
});
afterAll(() => h?.close());

/** Sends the query exactly as written (only the session is added). */
const raw = async (op: string, query: string) => (await h.get(`/api/v1/${op}?SessionToken=${h.session}&${query}`)).body;
const volume = async () => (await h.op('get_volume_device', { DeviceID: device })).Volume;

describe('quotes and integers over REST', () => {
  test.each([
    ['%2225%22', '25'],
    ['"26"', '26'],
    ['007', '7'],
    ['%2B5', '5'],
    ['+6', '6'], // an unencoded + is a space in a query string: " 6"
    ['%22%2B08%22', '8'],
    ['-0', '0'],
  ])('Volume=%s sets %s', async (sent, expected) => {
    expect(await raw('set_volume_device', `DeviceID=${device}&Volume=${sent}`)).toEqual({ Result: 'true' });
    expect(await volume()).toBe(expected);
  });

  test('quoted DeviceID and SessionToken are accepted like the others', async () => {
    expect((await h.get(`/api/v1/get_volume_device?SessionToken=%22${h.session}%22&DeviceID=%22${device}%22`)).body.Volume).toMatch(/^\d+$/);
  });

  test.each([['51'], ['-1'], ['%2B51'], ['1e1'], ['0x10'], ['5.0'], ['99999999999999999999']])(
    'Volume=%s is refused with the range in the message',
    async (sent) => {
      const r = await raw('set_volume_device', `DeviceID=${device}&Volume=${sent}`);
      expect(r).toMatchObject({ Result: 'false', ErrorCode: 'InvalidParameter', Parameter: 'Volume' });
      expect(r.ErrorMessage).toContain('Volume must be an integer from 0 to 50');
    },
  );

  test('a quoted Priority is accepted and counts', async () => {
    expect(await raw('play_tts_party_mode', 'Text=one&Priority=%22150%22')).toEqual({ Result: 'true' });
    const low = await raw('play_tts_party_mode', 'Text=two&Priority=%22149%22');
    expect(low).toMatchObject({ Result: 'false', ErrorCode: 'PriorityTooLow' });
    expect(await raw('play_tts_party_mode', 'Text=three&Priority=%2B0150')).toEqual({ Result: 'true' });
    await h.op('stop_play');
  });

  test.each([['2147483648'], ['-2147483649'], ['high']])('Priority=%s states the range', async (sent) => {
    const r = await raw('play_tts_party_mode', `Text=x&Priority=${sent}`);
    expect(r).toMatchObject({ Result: 'false', ErrorCode: 'InvalidParameter', Parameter: 'Priority' });
    expect(r.ErrorMessage).toContain('Priority must be an integer from -2147483648 to 2147483647');
  });

  test('the extreme 32-bit priorities are valid', async () => {
    expect(await raw('play_tts_party_mode', 'Text=x&Priority=2147483647')).toEqual({ Result: 'true' });
    expect(await raw('play_tts_party_mode', 'Text=x&Priority=2147483647')).toEqual({ Result: 'true' });
    await h.op('stop_play');
  });
});

describe('the helpers', () => {
  test('unquote strips one pair of surrounding quotes and the blanks around and inside them', () => {
    expect(unquote(' "abc" ')).toBe('abc');
    expect(unquote('" abc "')).toBe('abc');
    expect(unquote('""abc""')).toBe('"abc"');
    expect(unquote('"')).toBe('"');
    expect(unquote('a"b"')).toBe('a"b"');
  });

  test('parseInteger: one rule, range in the message', () => {
    expect(parseInteger('007', 'N', 0, 10)).toEqual({ ok: true, value: 7 });
    expect(parseInteger('+5', 'N', 0, 10)).toEqual({ ok: true, value: 5 });
    expect(parseInteger('-5', 'N', -10, 10)).toEqual({ ok: true, value: -5 });
    expect(parseInteger('11', 'N', 0, 10)).toMatchObject({ ok: false, message: expect.stringContaining('N must be an integer from 0 to 10') });
    expect(parseInteger('', 'N', 0, 10)).toEqual({ ok: false, message: 'N must be an integer from 0 to 10' });
  });
});
