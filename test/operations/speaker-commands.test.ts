/**
 * The speaker commands every front end shares (set_mute_device, get_mute_device,
 * set_speaker_power, set_party), through REST on a real hub with virtual speakers.
 */
import { EXAMPLE } from '../../src/operations/table';
import { startHub, virtualOf, type TestHub } from '../helpers/hub';
import { eventually } from '../helpers/wait';

const A = EXAMPLE.deviceId;
const B = EXAMPLE.otherDeviceId;
let h: TestHub;

beforeEach(async () => {
  h = await startHub({ speakers: { virtual: { count: 3 } } });
});
afterEach(() => h?.close());

const status = async () => (await h.op('playback_status')).PlaybackState;
const firstMedia = async () => (await h.op('media_list')).MediaList[0].PersistentID as string;
const playingOn = (id: string) =>
  virtualOf(h.hub)
    .speakers()
    .find((s) => s.id === id)!.state === 'playing';

test('mute on a speaker with its own mute keeps its volume; unmute reads back false', async () => {
  await h.op('set_volume_device', { DeviceID: A, Volume: '17' });
  expect(await h.op('set_mute_device', { DeviceID: A, Mute: 'true' })).toEqual({ Result: 'true' });
  expect(await h.op('get_mute_device', { DeviceID: A })).toEqual({ Mute: 'true' });
  expect((await h.op('get_volume_device', { DeviceID: A })).Volume).toBe('17');
  const speaker = virtualOf(h.hub)
    .speakers()
    .find((s) => s.id === A)!;
  expect(speaker.isMuted()).toBe(true);
  await h.op('set_mute_device', { DeviceID: A, Mute: 'off' });
  expect(await h.op('get_mute_device', { DeviceID: A })).toEqual({ Mute: 'false' });
  expect(speaker.isMuted()).toBe(false);
});

test('mute on a speaker without a mute of its own is volume 0, and unmute puts the level back', async () => {
  const speaker = virtualOf(h.hub)
    .speakers()
    .find((s) => s.id === B)!;
  // This speaker now has no mute of its own, as many renderers have none.
  Object.defineProperty(speaker, 'capabilities', { value: { ...speaker.capabilities, mute: false } });
  await h.op('set_volume_device', { DeviceID: B, Volume: '23' });
  await h.op('set_mute_device', { DeviceID: B, Mute: 'on' });
  expect((await h.op('get_volume_device', { DeviceID: B })).Volume).toBe('0');
  expect(await h.op('get_mute_device', { DeviceID: B })).toEqual({ Mute: 'true' });
  expect(speaker.isMuted()).toBe(false);
  await h.op('set_mute_device', { DeviceID: B, Mute: 'off' });
  expect((await h.op('get_volume_device', { DeviceID: B })).Volume).toBe('23');
  expect(await h.op('get_mute_device', { DeviceID: B })).toEqual({ Mute: 'false' });
});

test('a bad Mute value is InvalidParameter naming it', async () => {
  const r = await h.op('set_mute_device', { DeviceID: A, Mute: 'maybe' });
  expect(r.Result).toBe('false');
  expect(r.ErrorCode).toBe('InvalidParameter');
  expect(JSON.stringify(r)).toContain('Mute');
});

test('power: on plays the first library item on that speaker alone; off pauses it; on resumes it', async () => {
  await h.op('set_speaker_power', { DeviceID: A, Power: 'on' });
  await eventually(() => playingOn(A), 5000, 'A playing');
  expect(playingOn(B)).toBe(false);
  await h.op('set_speaker_power', { DeviceID: A, Power: 'off' });
  expect(await status()).toBe('PlayerStatePaused');
  await h.op('set_speaker_power', { DeviceID: A, Power: 'on' });
  expect(await status()).toBe('PlayerStatePlaying');
  await eventually(() => playingOn(A), 5000, 'A playing again');
});

test('power: off on a speaker sharing the playback takes it out; the others play on; on takes it back in', async () => {
  expect(await h.op('play_hub_media_selected_speakers', { PersistentID: await firstMedia(), DeviceIDList: `${A},${B}` })).toEqual({ Result: 'true' });
  await eventually(() => playingOn(A) && playingOn(B), 5000, 'both playing');
  await h.op('set_speaker_power', { DeviceID: B, Power: 'off' });
  await eventually(() => !playingOn(B), 5000, 'B stopped');
  expect(playingOn(A)).toBe(true);
  expect(await status()).toBe('PlayerStatePlaying');
  await h.op('set_speaker_power', { DeviceID: B, Power: 'on' });
  await eventually(() => playingOn(B), 5000, 'B back in');
});

test('party: on plays on every speaker, off stops', async () => {
  await h.op('set_party', { Party: 'on' });
  await eventually(
    () =>
      virtualOf(h.hub)
        .speakers()
        .every((s) => s.state === 'playing'),
    5000,
    'all playing',
  );
  await h.op('set_party', { Party: 'off' });
  expect(await status()).toBe('PlayerStateStopped');
});
