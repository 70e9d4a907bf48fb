import { execFileSync } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { connect as tcpConnect } from 'node:net';
import { mqttOverrides, mqttBannerLines } from '../../src/mqtt/cli-options';
import { parseConfig } from '../../src/hub-config';
import { mergeConfig } from '../../src/config/load';
import { buildCli } from '../../src/cli';
import { loadOrCreateKeys } from '../../src/mqtt/keys';
import { channelCommand, Probe, startMqttHub, type MqttTestHub } from './helpers';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqttPacket from 'mqtt-packet';
import { Aedes } from 'aedes';
import { eventually } from '../helpers/wait';

describe('keys', () => {
  test('generated once (>= 128 bits), kept with mode 0600, reused; configured keys win', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'speakerhub-keys-'));
    try {
      const a = await loadOrCreateKeys(dir);
      expect(a.generated).toBe(true);
      for (const k of [a.publishKey, a.subscribeKey]) expect(Buffer.from(k.slice(4), 'base64url').length * 8).toBeGreaterThanOrEqual(128);
      expect((await stat(join(dir, 'pubsub-keys.json'))).mode & 0o777).toBe(0o600);
      const b = await loadOrCreateKeys(dir);
      expect(b).toEqual({ ...a, generated: false });
      const c = await loadOrCreateKeys(dir, { publishKey: 'my-own-publish-key-123' });
      expect(c).toEqual({ publishKey: 'my-own-publish-key-123', subscribeKey: a.subscribeKey, generated: false });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('keys given in the config must be 16+ printable characters and differ', () => {
    expect(() => parseConfig({ pubsub: { publishKey: 'short' } })).toThrow(/pubsub.publishKey: pubsub.publishKey must be at least 16 characters/);
    expect(() => parseConfig({ pubsub: { publishKey: 'has spaces in it here' } })).toThrow(/printable/);
    expect(() => parseConfig({ pubsub: { publishKey: 'same-key-0123456789', subscribeKey: 'same-key-0123456789' } })).toThrow(/must differ/);
    expect(() => parseConfig({ mqtt: { url: 'http://broker:1883' } })).toThrow(/mqtt.url/);
    expect(parseConfig(mqttOverrides({ mqtt: { enabled: true, url: 'mqtts://broker.lan:8883' }, channel: 'home/speakers' })).mqtt.url).toBe(
      'mqtts://broker.lan:8883',
    );
    // --mqtt embedded wins over a broker URL in the config file.
    const cli = buildCli();
    const hub = cli.commands.find((c) => c.name() === 'hub')!;
    hub.action(() => undefined);
    for (const c of [cli, hub]) c.exitOverride().configureOutput({ writeErr: () => undefined });
    cli.parse([
      'node',
      'speakerhub',
      'hub',
      '--mqtt',
      'embedded',
      '--mqtt-port',
      '1884',
      '--channel',
      'home/sh',
      '--subscribe-key',
      'sub-0123456789abcdef',
    ]);
    const flags = hub.opts();
    const merged = parseConfig(mergeConfig({ mqtt: { url: 'mqtt://broker.lan:1883' } }, mqttOverrides(flags)));
    expect(merged.mqtt).toMatchObject({ enabled: true, url: '', port: 1884 });
    expect(merged.pubsub).toMatchObject({ channel: 'home/sh', subscribeKey: 'sub-0123456789abcdef' });
    expect(() => cli.parse(['node', 'speakerhub', 'hub', '--publish-key', 'short'])).toThrow();
  });
});

describe('the MQTT front end in a hub', () => {
  let t: MqttTestHub | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  test('keys are shown on the terminal banner and never logged', async () => {
    t = await startMqttHub();
    const banner = mqttBannerLines(t.ext).join('\n');
    expect(banner).toContain(t.keys.subscribeKey);
    expect(banner).toContain(t.keys.publishKey);
    const writer = await Probe.connect(t.url!, { username: t.keys.subscribeKey, password: t.keys.publishKey });
    await writer.client.subscribeAsync('speakerhub/channel');
    await channelCommand(writer, writer.client, 'speakerhub/channel', { Command: 'device_count', SessionToken: t.session });
    await Probe.connect(t.url!, { username: t.keys.subscribeKey, password: 'wrong-wrong-wrong' }).catch(() => undefined);
    await writer.end();
    const logs = t.logs.join('');
    expect(logs).toContain('MQTT started');
    expect(logs).not.toContain(t.keys.publishKey);
    expect(logs).not.toContain(t.keys.subscribeKey);
  });

  test('a busy MQTT port does not stop the hub: one clear line names the flag; WebSocket still works', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    try {
      t = await startMqttHub({ mqtt: { port } });
      const line = t.logs.find((l) => l.includes(`MQTT port ${port} is in use`));
      expect(line).toContain('--mqtt-port');
      expect(mqttBannerLines(t.ext).join('\n')).toContain('--mqtt-port');
      expect((await t.rest('device_count')).DeviceCount).toBe('3');
      const ws = await Probe.connect(`${t.base.replace('http', 'ws')}/mqtt`, { username: t.keys.subscribeKey, password: t.keys.publishKey });
      await ws.client.subscribeAsync('speakerhub/channel');
      expect((await channelCommand(ws, ws.client, 'speakerhub/channel', { Command: 'device_count', SessionToken: t.session })).DeviceCount).toBe('3');
      await ws.end();
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  });

  test("the hub's link to an external broker dies: the broker publishes its last will (bridge/state offline); it reconnects, says NetworkUnavailable and online", async () => {
    // A bare aedes over TCP as the external broker (mqtt.js link); the link to the embedded
    // broker is in process and cannot die on its own.
    const broker = await Aedes.createBroker();
    const server = createServer((s) => broker.handle(s));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `mqtt://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      t = await startMqttHub({ mqtt: { url, reconnectMinMs: 200 } });
      const p = await Probe.connect(url, {});
      await p.client.subscribeAsync(['speakerhub/bridge/state', 'speakerhub/channel']);
      await p.wait((m) => m.topic === 'speakerhub/bridge/state' && m.json?.state === 'online');
      // Fault injection: cut the hub client's stream without a DISCONNECT.
      (t.ext as unknown as { link: { client: { stream: { destroy(): void } } } }).link.client.stream.destroy();
      const offline = await p.wait((m) => m.topic === 'speakerhub/bridge/state' && m.json?.state === 'offline');
      const start = p.messages.indexOf(offline);
      await p.wait(
        (m) =>
          m.json?.Reason === 'NetworkUnavailable' && m.json.Network === 'Restored' && m.json.HKWHubUUID === t!.uuid && p.messages.indexOf(m) > start,
      );
      await p.wait((m) => m.json?.Event === 'HubOnline' && p.messages.indexOf(m) > start);
      await p.wait((m) => m.topic === 'speakerhub/bridge/state' && m.json?.state === 'online' && p.messages.indexOf(m) > start);
      await p.end();
      await t.close();
      t = undefined;
    } finally {
      await new Promise<void>((r) => broker.close(() => r()));
      await new Promise((r) => server.close(r));
    }
  });

  test('a clean stop says bridge/state offline itself', async () => {
    const hub = await startMqttHub();
    const p = await Probe.connect(hub.url!, { username: hub.keys.subscribeKey });
    await p.client.subscribeAsync('speakerhub/bridge/state');
    await p.wait((m) => m.json?.state === 'online');
    await hub.close();
    expect((await p.wait((m) => m.json?.state === 'offline')).retain).toBe(false);
    await p.end();
  });

  test('--mqtt off: no broker, no MQTT', async () => {
    t = await startMqttHub({ mqtt: { enabled: false } });
    expect(t.ext.status).toBeUndefined();
    expect(t.ext.brokerAddress).toBeUndefined();
  });

  test('a subscriber that stops reading is disconnected; the hub and other clients carry on', async () => {
    t = await startMqttHub({ mqtt: { drainTimeoutMs: 300 } });
    // A raw MQTT client that subscribes and then never reads again.
    const sock = tcpConnect({ host: '127.0.0.1', port: Number(t.url!.split(':')[2]) });
    const parser = mqttPacket.parser({ protocolVersion: 4 });
    const acked = new Promise<void>((resolve) => parser.on('packet', (p) => p.cmd === 'suback' && resolve()));
    sock.on('data', (d) => parser.parse(d));
    sock.write(
      mqttPacket.generate({
        cmd: 'connect',
        protocolId: 'MQTT',
        protocolVersion: 4,
        clean: true,
        clientId: 'slow',
        keepalive: 0,
        username: t.keys.subscribeKey,
      }),
    );
    sock.write(mqttPacket.generate({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'flood/#', qos: 0 }] }));
    await acked;
    sock.removeAllListeners('data');
    sock.pause();
    const closed = new Promise<void>((r) => sock.once('close', () => r()));
    const writer = await Probe.connect(t.url!, { username: t.keys.subscribeKey, password: t.keys.publishKey });
    const chunk = Buffer.alloc(200 * 1024, 7);
    const hub = t;
    // Publishers are not held up by the stalled reader beyond drainTimeoutMs; it is cut off.
    for (let n = 0; n < 200 && !hub.logs.some((l) => l.includes('drain timeout')); n++)
      await writer.client.publishAsync('flood/x', chunk, { qos: 1 });
    await eventually(() => hub.logs.some((l) => l.includes('drain timeout')), 10_000, 'the broker to drop the stalled reader');
    // A paused socket cannot see the close; reading again, it finds the connection ended.
    sock.on('data', () => undefined);
    sock.resume();
    await closed;
    await writer.client.subscribeAsync('speakerhub/channel');
    expect(
      (await channelCommand(writer, writer.client, 'speakerhub/channel', { Command: 'device_count', SessionToken: t.session })).DeviceCount,
    ).toBe('3');
    await writer.end();
  });

  test('Home Assistant discovery (when enabled): retained configs, republished when HA comes online', async () => {
    t = await startMqttHub({ mqtt: { haDiscovery: true } });
    const ha = await Probe.connect(t.url!, { username: t.keys.subscribeKey, password: t.keys.publishKey });
    await ha.client.subscribeAsync('homeassistant/#');
    const speakerId = (await t.rest('device_list')).DeviceList[0].DeviceID;
    const hubKey = t.uuid.replace(/-/g, '').slice(0, 12);
    // Scoped by the hub: another hub's virtual speakers (same DeviceIDs) never share these ids.
    const uid = `speakerhub_${hubKey}_${speakerId}`;
    const volume = await ha.wait((m) => m.topic === `homeassistant/number/${uid}/volume/config`);
    expect((await Probe.retained(t.url!, { username: t.keys.subscribeKey, password: t.keys.publishKey }, volume.topic)).retain).toBe(true);
    expect(volume.json).toMatchObject({
      unique_id: `${uid}_volume`,
      origin: { name: 'SpeakerHub', sw: expect.any(String) },
      command_topic: 'speakerhub/virtual_speaker_1/set',
      state_topic: 'speakerhub/virtual_speaker_1',
      min: 0,
      max: 50,
    });
    for (const kind of ['sensor/%/state', 'button/%/pause', 'button/%/resume', 'button/%/stop', 'notify/%/announce', 'notify/%/announce_duck']) {
      await ha.wait((m) => m.topic === `homeassistant/${kind.replace('%', uid)}/config`);
    }
    const all = await ha.wait((m) => m.topic === `homeassistant/notify/speakerhub_${hubKey}/announce/config`);
    // HA 2025.10 deprecates object_id: none is sent, default_entity_id instead (domain included).
    expect(all.json.object_id).toBeUndefined();
    expect(all.json.default_entity_id).toBe(`notify.speakerhub_${hubKey}_announce`);
    for (const m of ha.messages.filter((x) => x.topic.startsWith('homeassistant/') && x.json)) expect(m.json.object_id).toBeUndefined();
    // HA restarts: it says online, the hub publishes the configs again (not retained deliveries now).
    const before = ha.messages.length;
    await ha.client.publishAsync('homeassistant/status', 'online', { qos: 1 });
    const again = await ha.wait((m) => m.topic === `homeassistant/number/${uid}/volume/config` && ha.messages.indexOf(m) >= before);
    expect(again.retain).toBe(false);
    // The volume entity's command works as HA would send it.
    await ha.client.publishAsync('speakerhub/virtual_speaker_1/set', '{"volume": 12}', { qos: 1 });
    await ha.client.subscribeAsync('speakerhub/virtual_speaker_1');
    await ha.wait((m) => m.topic === 'speakerhub/virtual_speaker_1' && m.json?.volume === 12);
    await ha.end();
  });

  test('discovery payloads use only the fields Home Assistant documents for each platform; mute, power, play and the last announcement work as HA sends them', async () => {
    t = await startMqttHub({ mqtt: { haDiscovery: true } });
    const ha = await Probe.connect(t.url!, { username: t.keys.subscribeKey, password: t.keys.publishKey });
    await ha.client.subscribeAsync(['homeassistant/#', 'speakerhub/#']);
    const hubKey = t.uuid.replace(/-/g, '').slice(0, 12);
    const speakerId = (await t.rest('device_list')).DeviceList[0].DeviceID;
    const uid = `speakerhub_${hubKey}_${speakerId}`;
    const play = await ha.wait((m) => m.topic === `homeassistant/select/${uid}/play/config`);
    await ha.wait((m) => m.topic === `homeassistant/sensor/speakerhub_${hubKey}/last_announcement/config`);
    // The fields of HA's MQTT discovery documentation, per platform (abbreviations included).
    const COMMON = [
      'name',
      'unique_id',
      'default_entity_id',
      'origin',
      'availability',
      'availability_mode',
      'device',
      'icon',
      'json_attributes_topic',
      'json_attributes_template',
      'enabled_by_default',
      'entity_category',
      'qos',
    ];
    const PLATFORM: Record<string, string[]> = {
      number: [
        'command_topic',
        'command_template',
        'state_topic',
        'value_template',
        'min',
        'max',
        'step',
        'mode',
        'unit_of_measurement',
        'device_class',
        'optimistic',
        'retain',
      ],
      sensor: ['state_topic', 'value_template', 'device_class', 'options', 'unit_of_measurement', 'state_class', 'expire_after', 'force_update'],
      button: ['command_topic', 'command_template', 'payload_press', 'device_class', 'retain'],
      notify: ['command_topic', 'command_template', 'retain'],
      switch: [
        'command_topic',
        'command_template',
        'state_topic',
        'value_template',
        'payload_on',
        'payload_off',
        'state_on',
        'state_off',
        'optimistic',
        'retain',
        'device_class',
      ],
      select: ['command_topic', 'command_template', 'state_topic', 'value_template', 'options', 'optimistic', 'retain'],
      event: ['state_topic', 'value_template', 'event_types', 'device_class'],
    };
    const DEVICE = [
      'identifiers',
      'connections',
      'name',
      'manufacturer',
      'model',
      'model_id',
      'sw_version',
      'hw_version',
      'serial_number',
      'suggested_area',
      'via_device',
      'configuration_url',
    ];
    const ORIGIN = ['name', 'sw', 'sw_version', 'url', 'support_url'];
    const media = (await t.rest('media_list')).MediaList;
    const media0Title = () => media[0].Title as string;
    const isConfig = (m: { topic: string; json?: unknown }) => m.topic.startsWith('homeassistant/') && m.topic.endsWith('/config') && !!m.json;
    // Three speakers × 11 entities, and the hub's announce (plain and ducked), last announcement, play and command error.
    await eventually(() => new Set(ha.messages.filter(isConfig).map((m) => m.topic)).size === 3 * 11 + 5, 10_000, 'every discovery config');
    const configs = ha.messages.filter(isConfig);
    expect(new Set(configs.map((m) => m.topic.split('/')[1]))).toEqual(new Set(Object.keys(PLATFORM)));
    for (const m of configs) {
      const platform = m.topic.split('/')[1];
      for (const key of Object.keys(m.json)) expect([m.topic, key, [...COMMON, ...PLATFORM[platform]].includes(key)]).toEqual([m.topic, key, true]);
      for (const key of Object.keys(m.json.device)) expect([m.topic, key, DEVICE.includes(key)]).toEqual([m.topic, key, true]);
      for (const key of Object.keys(m.json.origin)) expect(ORIGIN.includes(key)).toBe(true);
      if (platform === 'select' || m.json.device_class === 'enum') expect(m.json.options.length).toBeGreaterThan(0);
      // An event entity's types are the stable error codes (what its payload's event_type says).
      if (platform === 'event') expect(m.json.event_types).toEqual(expect.arrayContaining(['InvalidParameter', 'DeviceNotFound', 'InternalError']));
    }
    // Every template renders in Jinja2 (HA's engine) to what HA needs: JSON commands, JSON attributes, valid states.
    const speakerState = {
      state: 'playing',
      volume: 20,
      muted: true,
      available: true,
      media: { kind: 'hub', title: media0Title(), persistent_id: '1' },
      time_elapsed: 12,
      device_id: speakerId,
      name: 'Virtual Speaker 1',
    };
    const jobs: { topic: string; key: string; template: string; variables: Record<string, unknown> }[] = [];
    for (const m of configs) {
      for (const [key, template] of Object.entries(m.json)) {
        if (!key.endsWith('_template')) continue;
        const value = m.topic.includes('/select/') ? m.json.options[0] : m.topic.includes('/number/') ? '17' : 'Dinner is ready';
        const value_json = m.topic.includes('last_announcement')
          ? { state: 'failed', reason: 'speaker lost', announcement_id: 'x', speakers: ['a'] }
          : speakerState;
        jobs.push({ topic: m.topic, key, template: String(template), variables: key === 'command_template' ? { value } : { value_json } });
        if (m.topic.includes('/notify/')) jobs.push({ topic: m.topic, key, template: String(template), variables: { value, title: 'Kitchen' } });
      }
    }
    const rendered = JSON.parse(
      execFileSync('/usr/bin/python3', [join(__dirname, 'render-jinja.py')], {
        input: JSON.stringify(jobs.map(({ template, variables }) => ({ template, variables }))),
      }).toString(),
    ) as (string | { error: string })[];
    rendered.forEach((r, i) => {
      const { topic, key, variables } = jobs[i];
      expect([topic, key, typeof r === 'string' ? 'ok' : r.error]).toEqual([topic, key, 'ok']);
      const text = r as string;
      if (key === 'command_template' || key === 'json_attributes_template') expect(() => JSON.parse(text)).not.toThrow();
      if (key === 'value_template' && topic.includes('/switch/')) expect(['ON', 'OFF']).toContain(text);
      if (key === 'value_template' && topic.includes('/sensor/')) expect(configs.find((c) => c.topic === topic)!.json.options).toContain(text);
      if (key === 'value_template' && topic.includes('/select/')) expect(text).toBe(media0Title());
      if (topic.includes('/notify/') && 'title' in variables) expect(Object.values(JSON.parse(text))[0]).toBe('Kitchen. Dinner is ready');
    });
    expect(jobs.length).toBeGreaterThan(30);
    // The hub device links its web page.
    const hubConfig = configs.find((m) => m.topic === `homeassistant/notify/speakerhub_${hubKey}/announce/config`)!;
    expect(hubConfig.json.device.configuration_url).toMatch(/^http:\/\/.+:\d+\/$/);
    // The play select: its options are the library's titles; HA sends the option, the template maps it.
    expect(play.json.options).toEqual(media.map((m: { Title: string }) => m.Title));
    const mapped = /\{% set ids = (\{.*?\}) %\}/.exec(play.json.command_template)![1];
    expect(JSON.parse(mapped)[media[0].Title]).toBe(media[0].PersistentID);
    await ha.client.publishAsync(
      'speakerhub/virtual_speaker_1/set',
      JSON.stringify({ play: { persistent_id: JSON.parse(mapped)[media[0].Title] } }),
      { qos: 1 },
    );
    await ha.wait((m) => m.topic === 'speakerhub/virtual_speaker_1' && m.json?.state === 'playing' && m.json.media?.title === media[0].Title);
    // Mute switch: HA's payload_on, the state follows the core's mute.
    const mute = configs.find((m) => m.topic === `homeassistant/switch/${uid}/mute/config`)!;
    await ha.client.publishAsync(mute.json.command_topic, mute.json.payload_on, { qos: 1 });
    await ha.wait((m) => m.topic === 'speakerhub/virtual_speaker_1' && m.json?.muted === true);
    expect(await t.rest('get_mute_device', { DeviceID: speakerId })).toMatchObject({ Mute: 'true' });
    await ha.client.publishAsync(mute.json.command_topic, mute.json.payload_off, { qos: 1 });
    await ha.wait((m) => m.topic === 'speakerhub/virtual_speaker_1' && m.json?.muted === false);
    // Power off: the speaker playing alone pauses.
    const power = configs.find((m) => m.topic === `homeassistant/switch/${uid}/power/config`)!;
    await ha.client.publishAsync(power.json.command_topic, power.json.payload_off, { qos: 1 });
    await ha.wait((m) => m.topic === 'speakerhub/virtual_speaker_1' && m.json?.state === 'paused');
    // The last announcement: its outcome, retained, with the reason when it failed.
    const a = await t.rest('announce', { Text: 'Hello', DeviceIDList: speakerId });
    const last = await ha.wait(
      (m) => m.topic === 'speakerhub/bridge/announcement' && m.json?.announcement_id === a.AnnouncementID && m.json.state === 'done',
      15_000,
      'announcement done',
    );
    expect(last.json.speakers).toEqual(['virtual_speaker_1']);
    // The ducked announce entities ask for Mode duck: a virtual speaker cannot mix, so it interrupts and says why.
    const duck = configs.find((m) => m.topic === `homeassistant/notify/${uid}/announce_duck/config`)!;
    expect(duck.json.command_template).toContain('"mode": "duck"');
    const hubDuck = configs.find((m) => m.topic === `homeassistant/notify/speakerhub_${hubKey}/announce_duck/config`)!;
    expect(hubDuck.json.command_template).toContain('"Mode": "duck"');
    await ha.client.publishAsync(duck.json.command_topic, JSON.stringify({ announce: 'Hello', mode: 'duck', transaction: 'duck1' }), { qos: 1 });
    const answer = await ha.wait((m) => m.topic === 'speakerhub/virtual_speaker_1/response' && m.json?.transaction === 'duck1');
    const ducked = await t.rest('announcement_status', { AnnouncementID: answer.json.data.AnnouncementID });
    expect(ducked).toMatchObject({ Mode: 'interrupt' });
    expect(ducked.ModeReason).toMatch(/duck needs every target to mix/);
    await t.rest('stop_play');
    await ha.end();
  });

  test('a speaker gone after a restart is published offline (a ghost); a set to it is answered with an error; forget_speaker clears its entities', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'speakerhub-mqtt-ghost-'));
    try {
      t = await startMqttHub({ mqtt: { haDiscovery: true }, speakers: { virtual: { count: 3 } } }, { dataDir });
      const third = (await t.rest('device_list')).DeviceList[2].DeviceID;
      await t.close();
      t = await startMqttHub({ mqtt: { haDiscovery: true }, speakers: { virtual: { count: 2 } } }, { dataDir });
      const hubKey = t.uuid.replace(/-/g, '').slice(0, 12);
      const c = await Probe.connect(t.url!, { username: t.keys.subscribeKey, password: t.keys.publishKey });
      await c.client.subscribeAsync(['speakerhub/#', 'homeassistant/#']);
      const ghost = await c.wait((m) => m.topic === 'speakerhub/virtual_speaker_3/availability');
      expect((await Probe.retained(t.url!, { username: t.keys.subscribeKey, password: t.keys.publishKey }, ghost.topic)).retain).toBe(true);
      expect(ghost.json).toEqual({ state: 'offline' });
      // A command to it: an error where the sender waits for the answer.
      await c.client.publishAsync('speakerhub/virtual_speaker_3/set', JSON.stringify({ volume: 5, transaction: 'g1' }), { qos: 1 });
      const err = await c.wait((m) => m.topic === 'speakerhub/virtual_speaker_3/response' && m.json?.transaction === 'g1');
      expect(err.json).toMatchObject({ status: 'error', code: 'DeviceUnavailable' });
      // A present speaker cannot be forgotten.
      await c.client.publishAsync('speakerhub/bridge/request/forget_speaker', JSON.stringify({ speaker: 'virtual_speaker_1', transaction: 'f0' }), {
        qos: 1,
      });
      expect((await c.wait((m) => m.topic === 'speakerhub/bridge/response/forget_speaker' && m.json?.transaction === 'f0')).json.status).toBe(
        'error',
      );
      await c.client.publishAsync('speakerhub/bridge/request/forget_speaker', JSON.stringify({ speaker: 'virtual_speaker_3', transaction: 'f1' }), {
        qos: 1,
      });
      const done = await c.wait((m) => m.topic === 'speakerhub/bridge/response/forget_speaker' && m.json?.transaction === 'f1');
      expect(done.json).toMatchObject({ status: 'ok', data: { friendly_name: 'virtual_speaker_3', device_id: third } });
      // Its discovery configs are cleared: empty retained payloads HA reads as "remove".
      await c.wait((m) => m.topic === `homeassistant/number/speakerhub_${hubKey}_${third}/volume/config` && m.text === '');
      await c.wait((m) => m.topic === 'speakerhub/virtual_speaker_3/availability' && m.text === '');
      await c.end();
      // Forgotten for good: its name is no longer kept for the next start (so no ghost is published then).
      await t.close();
      t = undefined as never;
      const names = JSON.parse(await readFile(join(dataDir, 'mqtt-names.json'), 'utf8'));
      expect(Object.keys(names)).not.toContain(third);
      expect(Object.keys(names)).toHaveLength(2);
    } finally {
      await t?.close();
      t = undefined as never;
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
