import { readFileSync } from 'node:fs';
import { labSuite } from '../helpers/labs';
import { channelCommand, Probe, startMqttHub, startWebMedia, type Fixture, type MqttTestHub } from './helpers';
import { Mosquitto, mosquittoUnavailable, USERS } from './mosquitto';
import { operationTests } from './operation-suite';
import { eventually } from '../helpers/wait';

const CHANNEL = 'speakerhub/channel';
const suite = labSuite('mosquitto', mosquittoUnavailable());

suite('an external broker: a real mosquitto with a password file and an ACL', () => {
  const broker = new Mosquitto();
  let t: MqttTestHub;
  let web: Awaited<ReturnType<typeof startWebMedia>>;
  let probe: Probe;
  let url: string;
  let fx: Fixture;

  beforeAll(async () => {
    await broker.start();
    url = `mqtt://127.0.0.1:${broker.port}`;
    web = await startWebMedia();
    // Subscribed before the hub starts: it sees the hub announce itself.
    probe = await Probe.connect(url, { username: 'controller', password: USERS.controller, clientId: 'probe-controller' });
    await probe.client.subscribeAsync([CHANNEL, 'speakerhub/#'], { qos: 1 });
    t = await startMqttHub({ mqtt: { url, username: 'speakerhub', password: USERS.speakerhub, reconnectMinMs: 1500, reconnectMaxMs: 3000 } });
    const devices = (await t.rest('device_list')).DeviceList;
    const media = (await t.rest('media_list')).MediaList;
    fx = { session: t.session, deviceIds: devices.map((d: any) => d.DeviceID), persistentId: media[0].PersistentID, webUrl: web.url };
  });

  afterAll(async () => {
    await probe?.end();
    await t?.close();
    await web?.close();
    await broker.stop();
  });

  test('the hub announces itself on the channel and sets bridge/state online', async () => {
    const hello = await probe.wait((m) => m.topic === CHANNEL && m.json?.Event === 'HubOnline');
    expect(hello.json).toMatchObject({ HKWHubUUID: t.uuid, SessionToken: '' });
    expect((await probe.wait((m) => m.topic === 'speakerhub/bridge/state')).json).toEqual({ state: 'online' });
  });

  operationTests(() => ({ t, probe, fx, channel: CHANNEL, base: 'speakerhub' }));

  test('a read-only user (MQTT 5) is refused with not-authorized and stays connected; a wrong password gets CONNACK not authorized', async () => {
    const viewer = await Probe.connect(url, { username: 'viewer', password: USERS.viewer, protocolVersion: 5 });
    await viewer.client.subscribeAsync(CHANNEL, { qos: 1 });
    await expect(
      viewer.client.publishAsync(CHANNEL, JSON.stringify({ Command: 'set_volume', SessionToken: fx.session, Volume: '9', transaction: 'viewer' }), {
        qos: 1,
      }),
    ).rejects.toThrow(/[Nn]ot authori[sz]ed|135/);
    const ok = await channelCommand(probe, probe.client, CHANNEL, { Command: 'get_volume', SessionToken: fx.session });
    expect(ok.Volume).not.toBe('9');
    expect(viewer.client.connected).toBe(true);
    await viewer.end();
    await expect(Probe.connect(url, { username: 'controller', password: 'wrong-password-000000' })).rejects.toMatchObject({ code: 5 });
  });

  test("Home Assistant's account (docs/mqtt.md ACL): reads the discovery configs, its birth message republishes them, its set works; the channel is refused", async () => {
    // This hub has discovery off; a second hub with it on, on the same broker and account.
    const withHa = await startMqttHub({
      mqtt: { url, username: 'speakerhub', password: USERS.speakerhub, haDiscovery: true, clientId: 'speakerhub-ha-test', baseTopic: 'speakerhub' },
    });
    try {
      const ha = await Probe.connect(url, { username: 'homeassistant', password: USERS.homeassistant, protocolVersion: 5 });
      await ha.client.subscribeAsync(['homeassistant/#', 'speakerhub/#'], { qos: 1 });
      const hubKey = withHa.uuid.replace(/-/g, '').slice(0, 12);
      await ha.wait((m) => m.topic === `homeassistant/notify/speakerhub_${hubKey}/announce/config`);
      const before = ha.messages.length;
      await ha.client.publishAsync('homeassistant/status', 'online', { qos: 1 });
      await ha.wait((m) => m.topic === `homeassistant/notify/speakerhub_${hubKey}/announce/config` && ha.messages.indexOf(m) >= before);
      await ha.client.publishAsync('speakerhub/virtual_speaker_2/set', '{"volume": 14}', { qos: 1 });
      await eventually(async () => (await withHa.rest('get_volume_device', { DeviceID: fx.deviceIds[1] })).Volume === '14', 5000, 'volume 14');
      await expect(ha.client.publishAsync(CHANNEL, JSON.stringify({ Command: 'stop_play', SessionToken: fx.session }), { qos: 1 })).rejects.toThrow(
        /[Nn]ot authori[sz]ed|135/,
      );
      await ha.end();
    } finally {
      await withHa.close();
    }
  });

  test('the broker killed and restarted mid-play: REST unaffected, QoS 1 commands sent while the hub was away are processed, state republished', async () => {
    await t.rest('stop_play');
    await t.rest('set_volume', { Volume: '20' });
    expect((await t.rest('play_hub_media_party_mode', { PersistentID: fx.persistentId })).Result).toBe('true');
    await probe.wait((m) => m.json?.Event === 'PlaybackTimeChanged', 5000, 'a time tick');
    // mosquitto saves its persistence each second: the hub's session (subscriptions) is on disk.
    await new Promise((r) => setTimeout(r, 1200));
    await probe.end();
    await broker.kill();
    await eventually(() => !t.ext.connected, 5000, 'the hub to notice');
    // REST carries on while the broker is away.
    expect((await t.rest('playback_status')).PlaybackState).toBe('PlayerStatePlaying');
    await broker.start();
    // The controller comes back with a persistent session and commands at QoS 1 before the hub is back (its backoff is 1.5 s).
    probe = await Probe.connect(url, { username: 'controller', password: USERS.controller, clientId: 'probe-controller', clean: false });
    await probe.client.subscribeAsync([CHANNEL, 'speakerhub/#'], { qos: 1 });
    await probe.client.publishAsync(
      CHANNEL,
      JSON.stringify({ Command: 'set_volume', HKWHubUUID: t.uuid, SessionToken: fx.session, Volume: '37', transaction: 'away-1' }),
      { qos: 1 },
    );
    await probe.client.publishAsync('speakerhub/bridge/request/get_volume', JSON.stringify({ transaction: 'away-2' }), { qos: 1 });
    expect(t.ext.connected).toBe(false);
    const answer = await probe.wait(
      (m) => m.topic === CHANNEL && m.json?.transaction === 'away-1' && 'ResponseOf' in m.json,
      15_000,
      'the queued command answered',
    );
    expect(answer.json).toMatchObject({ ResponseOf: 'set_volume', Result: 'true' });
    const bridged = await probe.wait((m) => m.topic === 'speakerhub/bridge/response/get_volume' && m.json?.transaction === 'away-2');
    expect(bridged.json).toMatchObject({ status: 'ok', data: { Volume: '37' } });
    expect((await t.rest('get_volume')).Volume).toBe('37');
    // After the outage: NetworkUnavailable, the announcement, and events flow again.
    await probe.wait((m) => m.topic === CHANNEL && m.json?.Event === 'DeviceStateUpdated' && m.json.Reason === 'NetworkUnavailable');
    await probe.wait((m) => m.topic === CHANNEL && m.json?.Event === 'HubOnline');
    await probe.wait((m) => m.topic === CHANNEL && m.json?.Event === 'PlaybackTimeChanged', 5000, 'time ticks again');
    expect((await t.rest('playback_status')).PlaybackState).toBe('PlayerStatePlaying');
    await t.rest('stop_play');
  });
});

suite('an external broker over TLS (mqtts) with credentials from the config', () => {
  const broker = new Mosquitto({ tls: true });
  let t: MqttTestHub | undefined;

  beforeAll(() => broker.start());
  afterAll(async () => {
    await t?.close();
    await broker.stop();
  });

  test('the hub connects with mqtts, verifies the certificate, and answers bridge requests', async () => {
    const url = `mqtts://127.0.0.1:${broker.port}`;
    t = await startMqttHub({ mqtt: { url, username: 'speakerhub', password: USERS.speakerhub, caFile: broker.caFile } });
    expect(t.ext.connected).toBe(true);
    const probe = await Probe.connect(url, { username: 'controller', password: USERS.controller, ca: readFileSync(broker.caFile) });
    await probe.client.subscribeAsync('speakerhub/bridge/response/device_count', { qos: 1 });
    await probe.client.publishAsync('speakerhub/bridge/request/device_count', JSON.stringify({ transaction: 'tls' }), { qos: 1 });
    const r = await probe.wait((m) => m.json?.transaction === 'tls');
    expect(r.json).toEqual({ status: 'ok', data: { DeviceCount: '3' }, transaction: 'tls' });
    await probe.end();
    // A hub that does not trust the broker's certificate never connects (and says why in the log).
    const untrusting = await startMqttHub({
      mqtt: { url, username: 'speakerhub', password: USERS.speakerhub, reconnectMinMs: 60_000, reconnectMaxMs: 60_000 },
    });
    expect(untrusting.ext.connected).toBe(false);
    expect(untrusting.logs.some((l) => /certificate/i.test(l))).toBe(true);
    await untrusting.close();
  });
});
