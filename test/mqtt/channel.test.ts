import type { MqttClient } from 'mqtt';
import { virtualOf } from '../helpers/hub';
import { bridgeRequest, channelCommand, Probe, startMqttHub, startWebMedia, type Fixture, type MqttTestHub } from './helpers';
import { operationTests } from './operation-suite';
import { eventually } from '../helpers/wait';

const CHANNEL = 'speakerhub/channel';
let t: MqttTestHub;
let web: Awaited<ReturnType<typeof startWebMedia>>;
let probe: Probe;
let writer: MqttClient;
let fx: Fixture;

beforeAll(async () => {
  web = await startWebMedia();
  t = await startMqttHub();
  const creds = { username: t.keys.subscribeKey, password: t.keys.publishKey };
  probe = await Probe.connect(t.url!, creds);
  await probe.client.subscribeAsync([CHANNEL, 'speakerhub/#'], { qos: 1 });
  writer = probe.client;
  const devices = (await t.rest('device_list')).DeviceList;
  const media = (await t.rest('media_list')).MediaList;
  fx = { session: t.session, deviceIds: devices.map((d: any) => d.DeviceID), persistentId: media[0].PersistentID, webUrl: web.url };
});

afterAll(async () => {
  await probe?.end();
  await t?.close();
  await web?.close();
});

describe('the publish/subscribe channel (compatibility.md envelope)', () => {
  test('bridge/state is retained online while the hub runs', async () => {
    const m = await probe.wait((m) => m.topic === 'speakerhub/bridge/state');
    expect(m.json).toEqual({ state: 'online' });
    expect((await Probe.retained(t.url!, { username: t.keys.subscribeKey }, m.topic)).retain).toBe(true);
  });

  test('init_session without HKWHubUUID is answered with the hub UUID and a working SessionToken', async () => {
    const r = await channelCommand(probe, writer, CHANNEL, { Command: 'init_session' });
    expect(r).toMatchObject({ ResponseOf: 'init_session', HKWHubUUID: t.uuid });
    expect(r.SessionToken).toMatch(/.{16,}/);
    const count = await channelCommand(probe, writer, CHANNEL, { Command: 'device_count', HKWHubUUID: t.uuid, SessionToken: r.SessionToken });
    expect(count).toMatchObject({ ResponseOf: 'device_count', DeviceCount: '3', SessionToken: r.SessionToken, HKWHubUUID: t.uuid });
  });

  operationTests(() => ({ t, probe, fx, channel: CHANNEL, base: 'speakerhub' }));

  test('values as JSON numbers, the SesssionToken misspelling and a DeviceIDList array are accepted', async () => {
    const r = await channelCommand(probe, writer, CHANNEL, {
      Command: 'set_volume_device',
      HKWHubUUID: t.uuid,
      SesssionToken: fx.session,
      DeviceID: Number(fx.deviceIds[1]),
      Volume: 33,
    });
    expect(r.Result).toBe('true');
    expect((await t.rest('get_volume_device', { DeviceID: fx.deviceIds[1] })).Volume).toBe('33');
    await t.rest('stop_play');
    const p = await channelCommand(probe, writer, CHANNEL, {
      Command: 'play_hub_media_selected_speakers',
      HKWHubUUID: t.uuid,
      SessionToken: fx.session,
      PersistentID: fx.persistentId,
      DeviceIDList: fx.deviceIds.slice(0, 2),
    });
    expect(p.Result).toBe('true');
    expect((await t.rest('is_playing')).IsPlaying).toBe('true');
    await t.rest('stop_play');
  });

  test('a command for another hub is ignored; the next one for this hub is answered', async () => {
    const other = channelCommand(probe, writer, CHANNEL, {
      Command: 'device_count',
      HKWHubUUID: '00000000-0000-4000-8000-000000000000',
      SessionToken: fx.session,
    });
    const mine = await channelCommand(probe, writer, CHANNEL, { Command: 'device_count', HKWHubUUID: t.uuid, SessionToken: fx.session });
    expect(mine.DeviceCount).toBe('3');
    const none = await Promise.race([other.then(() => 'answered'), new Promise((r) => setTimeout(() => r('ignored'), 300))]);
    expect(none).toBe('ignored');
  });
});

describe('bad input on the channel: answered with REST error codes, or logged', () => {
  const cases: [string, Record<string, unknown>, string, Record<string, string> | null][] = [
    ['unknown Command', { Command: 'no_such_op' }, 'UnknownOperation', null],
    ['unknown Command is reported before a missing session', { Command: 'no_such_op', Volume: 'x' }, 'UnknownOperation', null],
    ['a non-string Command', { Command: 42 }, 'UnknownOperation', null],
    ['a missing SessionToken', { Command: 'device_count' }, 'InvalidParameter', {}],
    ['an unknown SessionToken', { Command: 'device_count', SessionToken: 'nope-nope-nope' }, 'SessionNotFound', { SessionToken: 'nope-nope-nope' }],
    ['a missing parameter', { Command: 'device_info', SessionToken: '$S' }, 'InvalidParameter', { SessionToken: '$S' }],
    [
      'a malformed parameter',
      { Command: 'set_volume', SessionToken: '$S', Volume: 'loud' },
      'InvalidParameter',
      { SessionToken: '$S', Volume: 'loud' },
    ],
    ['an out-of-range volume', { Command: 'set_volume', SessionToken: '$S', Volume: 51 }, 'InvalidParameter', { SessionToken: '$S', Volume: '51' }],
    ['an object where a value belongs', { Command: 'device_info', SessionToken: '$S', DeviceID: { a: 1 } }, 'InvalidParameter', null],
    [
      'an unsupported URL scheme',
      { Command: 'play_web_media_party_mode', SessionToken: '$S', MediaUrl: 'ftp://x/y.mp3' },
      'UnsupportedScheme',
      { SessionToken: '$S', MediaUrl: 'ftp://x/y.mp3' },
    ],
    ['a __proto__ field smuggling a session', JSON.parse('{"Command":"device_count","__proto__":{"SessionToken":"$S"}}'), 'InvalidParameter', null],
    [
      'an unknown DeviceID',
      { Command: 'device_info', SessionToken: '$S', DeviceID: '123' },
      'DeviceNotFound',
      { SessionToken: '$S', DeviceID: '123' },
    ],
  ];
  test.each(cases)('%s', async (_what, cmd, code, restParams) => {
    const fill = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, v === '$S' ? fx.session : v]));
    const r = await channelCommand(probe, writer, CHANNEL, { HKWHubUUID: t.uuid, ...fill(cmd) });
    expect(r.Result).toBe('false');
    expect(r.ErrorCode).toBe(code);
    expect(r.ResponseOf).toBe(typeof cmd.Command === 'string' ? cmd.Command : JSON.stringify(cmd.Command));
    if (restParams) {
      // Same code and message as REST gives for the same request.
      const rest: any = await (
        await fetch(`${t.base}/api/v1/${String(cmd.Command)}?${new URLSearchParams(fill(restParams) as Record<string, string>)}`, {
          headers: { Authorization: 'Bearer test-token-0123456789abcdefghij' },
        })
      ).json();
      expect({ ErrorCode: r.ErrorCode, ErrorMessage: r.ErrorMessage }).toEqual({ ErrorCode: rest.ErrorCode, ErrorMessage: rest.ErrorMessage });
    }
  });

  test.each([
    ['not JSON', 'play something'],
    ['a JSON array', '[1,2]'],
    ['no Command', JSON.stringify({ SessionToken: 'x' })],
  ])('%s: logged (rate-limited), dropped, and the hub carries on', async (_what, payload) => {
    const before = t.logs.length;
    await writer.publishAsync(CHANNEL, payload, { qos: 1 });
    const ok = await channelCommand(probe, writer, CHANNEL, { Command: 'device_count', SessionToken: fx.session });
    expect(ok.DeviceCount).toBe('3');
    // Rate-limited: a kind already logged in the last seconds is only counted.
    const logged = t.logs
      .slice(before)
      .concat(t.logs)
      .some((l) => l.includes('pubsub: message dropped'));
    expect(logged).toBe(true);
  });

  test('an oversized payload is refused by the broker limit; the hub carries on', async () => {
    const big = await Probe.connect(t.url!, { username: t.keys.subscribeKey, password: t.keys.publishKey });
    const closed = new Promise<void>((r) => big.client.once('close', () => r()));
    big.client.publish(CHANNEL, 'x'.repeat(300 * 1024));
    await closed;
    const ok = await channelCommand(probe, writer, CHANNEL, { Command: 'device_count', SessionToken: fx.session });
    expect(ok.DeviceCount).toBe('3');
    await big.end();
  });

  test('bridge requests: non-JSON payload and unknown operation are answered', async () => {
    const transactionless = probe.wait((m) => m.topic === 'speakerhub/bridge/response/device_count' && m.json?.status === 'error');
    await writer.publishAsync('speakerhub/bridge/request/device_count', 'not json', { qos: 1 });
    expect((await transactionless).json).toMatchObject({ status: 'error', code: 'InvalidParameter' });
    const r = await bridgeRequest(probe, writer, 'speakerhub', 'no_such_op', {});
    expect(r).toMatchObject({ status: 'error', code: 'UnknownOperation' });
    const missing = await bridgeRequest(probe, writer, 'speakerhub', 'device_info', {});
    expect(missing).toMatchObject({ status: 'error', code: 'InvalidParameter', parameter: 'DeviceID' });
    const close = await bridgeRequest(probe, writer, 'speakerhub', 'close_session', {});
    expect(close).toMatchObject({ status: 'error', code: 'InvalidParameter' });
  });
});

describe('key rights through the hub', () => {
  test('a subscribe-only client receives but cannot command, and stays connected', async () => {
    const ro = await Probe.connect(t.url!, { username: t.keys.subscribeKey });
    await ro.client.subscribeAsync(CHANNEL);
    await ro.client.publishAsync(CHANNEL, JSON.stringify({ Command: 'set_volume', SessionToken: fx.session, Volume: '7', transaction: 'ro' }), {
      qos: 1,
    });
    await ro.client.publishAsync('speakerhub/bridge/request/set_volume', JSON.stringify({ Volume: '7', transaction: 'ro' }), { qos: 1 });
    // The writer's command is answered; the read-only one never was (the hub saw nothing).
    const ok = await channelCommand(probe, writer, CHANNEL, { Command: 'get_volume', SessionToken: fx.session });
    expect(ok.Volume).not.toBe('7');
    await ro.wait((m) => m.json?.transaction === ok.transaction);
    expect(ro.messages.some((m) => m.json?.transaction === 'ro' && 'ResponseOf' in m.json)).toBe(false);
    expect(ro.client.connected).toBe(true);
    await ro.end();
  });

  test('a wrong key is refused with CONNACK not authorized', async () => {
    await expect(Probe.connect(t.url!, { username: t.keys.subscribeKey, password: 'pub-this-is-not-the-key' })).rejects.toMatchObject({ code: 5 });
    await expect(Probe.connect(t.url!, { username: 'sub-this-is-not-the-key', password: t.keys.publishKey })).rejects.toMatchObject({ code: 5 });
  });

  test('MQTT over WebSocket on the REST port with the same keys', async () => {
    const ws = await Probe.connect(`${t.base.replace('http', 'ws')}/mqtt`, { username: t.keys.subscribeKey, password: t.keys.publishKey });
    await ws.client.subscribeAsync(CHANNEL);
    const r = await channelCommand(ws, ws.client, CHANNEL, { Command: 'device_count', SessionToken: fx.session });
    expect(r.DeviceCount).toBe('3');
    await ws.end();
  });
});

describe('events and the bridge', () => {
  test('playback events arrive in order, with HKWHubUUID', async () => {
    await t.rest('stop_play');
    const start = probe.messages.length;
    expect((await t.rest('play_hub_media_party_mode', { PersistentID: fx.persistentId })).Result).toBe('true');
    await probe.wait(
      (m) => m.json?.Event === 'PlaybackTimeChanged' && m.json.PlaybackTime === '2' && probe.messages.indexOf(m) >= start,
      10_000,
      'PlaybackTime 2',
    );
    await t.rest('stop_play');
    await probe.wait(
      (m) => m.json?.Event === 'PlaybackStateChanged' && m.json.PlaybackState === 'PlayerStateStopped' && probe.messages.indexOf(m) >= start,
      5000,
      'stopped',
    );
    const events = probe.messages.slice(start).filter((m) => m.topic === CHANNEL && m.json?.Event);
    const seq = events.map((m) =>
      m.json.Event === 'PlaybackTimeChanged' ? `time ${m.json.PlaybackTime}` : `${m.json.Event} ${m.json.PlaybackState ?? m.json.Reason}`,
    );
    expect(seq.slice(0, 3)).toEqual(['PlaybackStateChanged PlayerStatePlaying', 'time 1', 'time 2']);
    expect(seq[seq.length - 1]).toBe('PlaybackStateChanged PlayerStateStopped');
    for (const e of events) expect(e.json).toMatchObject({ HKWHubUUID: t.uuid, SessionToken: '' });
  });

  test('device events: DeviceStateUpdated on the channel, bridge/event and retained availability', async () => {
    const v = virtualOf(t.hub);
    const speaker = v.speakers()[2];
    const start = probe.messages.length;
    speaker.vanish();
    const e = await probe.wait(
      (m) => m.json?.Event === 'DeviceStateUpdated' && m.json.Reason === 'DeviceUnavailable' && probe.messages.indexOf(m) >= start,
    );
    expect(e.json).toMatchObject({ HKWHubUUID: t.uuid, DeviceID: speaker.id });
    await probe.wait((m) => m.topic === 'speakerhub/bridge/event' && m.json?.type === 'device_unavailable' && m.json.data.device_id === speaker.id);
    await probe.wait((m) => m.topic === 'speakerhub/virtual_speaker_3/availability' && m.json?.state === 'offline');
    speaker.reappear();
    await probe.wait((m) => m.json?.Reason === 'DeviceAvailable' && probe.messages.indexOf(m) >= start);
    await probe.wait(
      (m) => m.topic === 'speakerhub/virtual_speaker_3/availability' && m.json?.state === 'online' && probe.messages.indexOf(m) >= start,
    );
  });

  test('per-speaker set/get and retained state after a client reconnects', async () => {
    const name = 'virtual_speaker_1';
    await writer.publishAsync(`speakerhub/${name}/set`, JSON.stringify({ volume: 31, transaction: 's1' }), { qos: 1 });
    const resp = await probe.wait((m) => m.topic === `speakerhub/${name}/response` && m.json?.transaction === 's1');
    expect(resp.json.status).toBe('ok');
    await probe.wait((m) => m.topic === `speakerhub/${name}` && m.json?.volume === 31);
    // A new client gets the retained state at once.
    const late = await Probe.connect(t.url!, { username: t.keys.subscribeKey });
    await late.client.subscribeAsync(`speakerhub/${name}`);
    const state = await late.wait((m) => m.topic === `speakerhub/${name}`);
    expect(state.retain).toBe(true);
    expect(state.json).toMatchObject({ state: 'stopped', volume: 31, muted: false, available: true, device_id: fx.deviceIds[0] });
    await late.end();
    // DeviceID works as the topic segment too; play and state through set.
    await writer.publishAsync(`speakerhub/${fx.deviceIds[0]}/set`, JSON.stringify({ play: { persistent_id: fx.persistentId } }), { qos: 1 });
    await probe.wait((m) => m.topic === `speakerhub/${name}` && m.json?.state === 'playing', 10_000, 'playing state');
    await writer.publishAsync(`speakerhub/${name}/set`, JSON.stringify({ state: 'pause' }), { qos: 1 });
    await probe.wait((m) => m.topic === `speakerhub/${name}` && m.json?.state === 'paused');
    await writer.publishAsync(`speakerhub/${name}/set`, JSON.stringify({ state: 'resume' }), { qos: 1 });
    const resumed = probe.messages.length;
    await probe.wait((m) => m.topic === `speakerhub/${name}` && m.json?.state === 'playing' && probe.messages.indexOf(m) >= resumed - 1);
    await writer.publishAsync(`speakerhub/${name}/set`, JSON.stringify({ state: 'stop', transaction: 'stop' }), { qos: 1 });
    await probe.wait((m) => m.topic === `speakerhub/${name}/response` && m.json?.transaction === 'stop');
    await eventually(async () => (await t.rest('is_playing')).IsPlaying === 'false');
    // Bad sets are answered.
    await writer.publishAsync(`speakerhub/${name}/set`, JSON.stringify({ volume: 99, transaction: 'bad' }), { qos: 1 });
    expect((await probe.wait((m) => m.topic.endsWith('/response') && m.json?.transaction === 'bad')).json).toMatchObject({
      status: 'error',
      code: 'InvalidParameter',
    });
    await writer.publishAsync(`speakerhub/${name}/set`, JSON.stringify({ colour: 'red', transaction: 'bad2' }), { qos: 1 });
    expect((await probe.wait((m) => m.topic.endsWith('/response') && m.json?.transaction === 'bad2')).json).toMatchObject({
      status: 'error',
      code: 'InvalidParameter',
    });
    await writer.publishAsync('speakerhub/nobody_here/set', JSON.stringify({ volume: 3 }), { qos: 1 });
    await probe.wait((m) => m.topic === 'speakerhub/bridge/event' && m.json?.type === 'error' && m.json.data.code === 'DeviceNotFound');
  });

  test("mute and power through set are the table's speaker commands: the speaker's own mute, power on plays, off pauses", async () => {
    const name = 'virtual_speaker_1';
    await t.rest('stop_play');
    await writer.publishAsync(`speakerhub/${name}/set`, JSON.stringify({ mute: true, transaction: 'm1' }), { qos: 1 });
    expect((await probe.wait((m) => m.topic === `speakerhub/${name}/response` && m.json?.transaction === 'm1')).json.status).toBe('ok');
    await probe.wait((m) => m.topic === `speakerhub/${name}` && m.json?.muted === true, 5000, 'muted state');
    expect(await t.rest('get_mute_device', { DeviceID: fx.deviceIds[0] })).toMatchObject({ Mute: 'true' });
    await writer.publishAsync(`speakerhub/${name}/set`, JSON.stringify({ mute: false }), { qos: 1 });
    await probe.wait((m) => m.topic === `speakerhub/${name}` && m.json?.muted === false, 5000, 'unmuted state');
    await writer.publishAsync(`speakerhub/${name}/set`, JSON.stringify({ power: 'on' }), { qos: 1 });
    await probe.wait((m) => m.topic === `speakerhub/${name}` && m.json?.state === 'playing', 10_000, 'playing after power on');
    await writer.publishAsync(`speakerhub/${name}/set`, JSON.stringify({ power: 'off' }), { qos: 1 });
    await probe.wait((m) => m.topic === `speakerhub/${name}` && m.json?.state === 'paused', 10_000, 'paused after power off');
    await t.rest('stop_play');
  });

  test('announce with a volume through set: spoken at that level, the own level restored', async () => {
    await t.rest('stop_play');
    expect((await t.rest('set_volume_device', { DeviceID: fx.deviceIds[1], Volume: '12' })).Result).toBe('true');
    await writer.publishAsync('speakerhub/virtual_speaker_2/set', JSON.stringify({ announce: 'Dinner is ready', volume: 25, transaction: 'ann' }), {
      qos: 1,
    });
    const answer = (await probe.wait((m) => m.topic.endsWith('/response') && m.json?.transaction === 'ann')).json;
    expect(answer.status).toBe('ok');
    expect(answer.data.AnnouncementID).toEqual(expect.any(String));
    // While it speaks, the speaker's retained state says so, with the announcement's level.
    await probe.wait(
      (m) =>
        m.topic === 'speakerhub/virtual_speaker_2' &&
        m.json?.volume === 25 &&
        m.json?.state === 'announcing' &&
        m.json?.announcement_id === answer.data.AnnouncementID,
    );
    // Spoken: the state is what the speaker is back to (nothing played before: stopped).
    await probe.wait((m) => m.topic === 'speakerhub/virtual_speaker_2' && m.json?.state === 'stopped' && m.json?.announcement_id === undefined);
    await eventually(
      async () => (await t.rest('announcement_status', { AnnouncementID: answer.data.AnnouncementID })).State === 'done',
      15000,
      'the announcement done',
    );
    expect((await t.rest('get_volume_device', { DeviceID: fx.deviceIds[1] })).Volume).toBe('12');
    await t.rest('stop_play');
  });

  test('announce with mode duck through set: the virtual speaker cannot mix, so it interrupts and the status says why; mode alone is refused', async () => {
    await t.rest('stop_play');
    const set = { announce: 'Ducked if it could', mode: 'duck', duck_level: -20, fade_ms: 300, transaction: 'duck1' };
    await writer.publishAsync('speakerhub/virtual_speaker_2/set', JSON.stringify(set), { qos: 1 });
    const answer = (await probe.wait((m) => m.topic.endsWith('/response') && m.json?.transaction === 'duck1')).json;
    expect(answer.status).toBe('ok');
    const status = await t.rest('announcement_status', { AnnouncementID: answer.data.AnnouncementID });
    expect(status).toMatchObject({ Mode: 'interrupt', ModeReason: expect.stringContaining('(virtual)') });
    await eventually(
      async () => (await t.rest('announcement_status', { AnnouncementID: answer.data.AnnouncementID })).State === 'done',
      15000,
      'the announcement done',
    );
    await writer.publishAsync('speakerhub/virtual_speaker_2/set', JSON.stringify({ mode: 'duck', transaction: 'duck2' }), { qos: 1 });
    const refused = (await probe.wait((m) => m.topic.endsWith('/response') && m.json?.transaction === 'duck2')).json;
    expect(refused).toMatchObject({ status: 'error' });
    expect(JSON.stringify(refused)).toContain('mode goes with announce');
    await writer.publishAsync('speakerhub/virtual_speaker_2/set', JSON.stringify({ announce: 'x', duck_level: -80, transaction: 'duck3' }), {
      qos: 1,
    });
    const bad = (await probe.wait((m) => m.topic.endsWith('/response') && m.json?.transaction === 'duck3')).json;
    expect(JSON.stringify(bad)).toContain('DuckLevel');
  });

  test("a speaker's sets are carried out in the order sent: an announcement, then a stop", async () => {
    await t.rest('stop_play');
    writer.publish('speakerhub/virtual_speaker_2/set', JSON.stringify({ announce: 'One moment please', transaction: 'o1' }), { qos: 1 });
    writer.publish('speakerhub/virtual_speaker_2/set', JSON.stringify({ state: 'stop', transaction: 'o2' }), { qos: 1 });
    const first = await probe.wait((m) => m.topic.endsWith('/response') && m.json?.transaction === 'o1');
    const second = await probe.wait((m) => m.topic.endsWith('/response') && m.json?.transaction === 'o2');
    expect(probe.messages.indexOf(first)).toBeLessThan(probe.messages.indexOf(second));
    expect(second.json.status).toBe('ok');
    expect((await t.rest('is_playing')).IsPlaying).toBe('false');
  });

  test("a session's channel commands are answered in the order sent", async () => {
    await t.rest('stop_play');
    const base = { HKWHubUUID: t.uuid, SessionToken: fx.session };
    writer.publish(CHANNEL, JSON.stringify({ ...base, Command: 'play_tts_party_mode', Text: 'Ordered', transaction: 'c1' }), { qos: 1 });
    writer.publish(CHANNEL, JSON.stringify({ ...base, Command: 'is_playing', transaction: 'c2' }), { qos: 1 });
    const second = await probe.wait((m) => m.json?.ResponseOf === 'is_playing' && m.json.transaction === 'c2');
    const first = probe.messages.find((m) => m.json?.ResponseOf === 'play_tts_party_mode' && m.json.transaction === 'c1');
    expect(first?.json.Result).toBe('true');
    expect(second.json.IsPlaying).toBe('true');
    await t.rest('stop_play');
  });
});
