import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { ERROR_CODES } from '../../src/core/errors';
import { bridgeRequest, channelCommand, Probe, startMqttHub, type MqttTestHub } from './helpers';

/**
 * Home Assistant's MQTT entities of issue 28 (../notes: home-assistant.md), against the hub's
 * embedded broker (aedes) with HA's own template engine (Jinja2): every failed MQTT command is an
 * event of the "Command error" event entities (the hub's, and the speaker's a command named);
 * the "Play on all speakers" select goes back to none when its playback stops; Power reads on
 * for a speaker that is reachable, idle or not.
 */

jest.setTimeout(60_000);

let t: MqttTestHub | undefined;
let ha: Probe | undefined;
afterEach(async () => {
  await ha?.end();
  ha = undefined;
  await t?.close();
  t = undefined;
});

/** Renders HA templates with Jinja2 (test/mqtt/render-jinja.py). */
function render(jobs: { template: string; variables: Record<string, unknown> }[]): string[] {
  const out = JSON.parse(execFileSync('/usr/bin/python3', [join(__dirname, 'render-jinja.py')], { input: JSON.stringify(jobs) }).toString()) as (
    string | { error: string }
  )[];
  return out.map((r) => {
    if (typeof r !== 'string') throw new Error(r.error);
    return r;
  });
}

async function start(): Promise<{ hubKey: string; uid: string; speakerId: string }> {
  t = await startMqttHub({ mqtt: { haDiscovery: true } });
  ha = await Probe.connect(t.url!, { username: t.keys.subscribeKey, password: t.keys.publishKey });
  await ha.client.subscribeAsync(['homeassistant/#', 'speakerhub/#']);
  const hubKey = t.uuid.replace(/-/g, '').slice(0, 12);
  const speakerId = (await t.rest('device_list')).DeviceList[0].DeviceID as string;
  return { hubKey, uid: `speakerhub_${hubKey}_${speakerId}`, speakerId };
}

test('a failed MQTT command is an event of the Command error entities: the hub’s, and each named speaker’s, with its code and message', async () => {
  const { hubKey, uid, speakerId } = await start();
  const hubEvent = await ha!.wait((m) => m.topic === `homeassistant/event/speakerhub_${hubKey}/command_error/config`);
  const speakerEvent = await ha!.wait((m) => m.topic === `homeassistant/event/${uid}/command_error/config`);
  // What HA's MQTT event platform requires: a state topic and the event types (unique strings);
  // no value_template, so the payload's own event_type is read (and must be one of them).
  for (const c of [hubEvent, speakerEvent]) {
    const keys = { username: t!.keys.subscribeKey, password: t!.keys.publishKey };
    expect(await Probe.retained(t!.url!, keys, c.topic)).toMatchObject({ retain: true, text: c.text });
  }
  for (const c of [hubEvent, speakerEvent]) {
    expect(c.json).toMatchObject({ name: 'Command error', entity_category: 'diagnostic' });
    expect(c.json.value_template).toBeUndefined();
    expect(c.json.event_types).toEqual(Object.keys(ERROR_CODES));
    expect(new Set(c.json.event_types).size).toBe(c.json.event_types.length);
  }
  expect(hubEvent.json.state_topic).toBe('speakerhub/bridge/error');
  expect(speakerEvent.json.state_topic).toBe('speakerhub/virtual_speaker_1/error');
  expect(speakerEvent.json.availability_mode).toBe('all');
  const errorsOn = (topic: string, from: number) => ha!.messages.slice(from).filter((m) => m.topic === topic);

  // A set the speaker refuses: its response topic answers, and both entities get the event.
  let mark = ha!.messages.length;
  await ha!.client.publishAsync('speakerhub/virtual_speaker_1/set', JSON.stringify({ volume: 99 }), { qos: 1 });
  const onSpeaker = await ha!.wait((m) => m.topic === 'speakerhub/virtual_speaker_1/error' && ha!.messages.indexOf(m) >= mark);
  expect(onSpeaker.retain).toBe(false);
  expect(onSpeaker.json).toMatchObject({
    event_type: 'InvalidParameter',
    command: 'set',
    speaker: 'virtual_speaker_1',
    message: expect.stringMatching(/Volume/),
  });
  const onHub = await ha!.wait((m) => m.topic === 'speakerhub/bridge/error' && ha!.messages.indexOf(m) >= mark);
  expect(onHub.json).toEqual(onSpeaker.json);
  const answer = await ha!.wait((m) => m.topic === 'speakerhub/virtual_speaker_1/response' && ha!.messages.indexOf(m) >= mark);
  expect(answer.json).toMatchObject({ status: 'error', code: 'InvalidParameter' });

  // A bridge request naming the speaker (DeviceIDList): both entities; its answer as before.
  mark = ha!.messages.length;
  const refused = await bridgeRequest(ha!, ha!.client, 'speakerhub', 'play_hub_media_selected_speakers', {
    PersistentID: '999999',
    DeviceIDList: [speakerId],
  });
  expect(refused).toMatchObject({ status: 'error', code: 'MediaNotFound' });
  const media = await ha!.wait((m) => m.topic === 'speakerhub/virtual_speaker_1/error' && ha!.messages.indexOf(m) >= mark);
  expect(media.json).toMatchObject({ event_type: 'MediaNotFound', command: 'play_hub_media_selected_speakers', message: expect.any(String) });
  await ha!.wait((m) => m.topic === 'speakerhub/bridge/error' && ha!.messages.indexOf(m) >= mark && m.json?.event_type === 'MediaNotFound');

  // The spec's channel too: a command that names the speaker (DeviceID).
  mark = ha!.messages.length;
  await channelCommand(ha!, ha!.client, 'speakerhub/channel', {
    Command: 'set_volume_device',
    SessionToken: t!.session,
    DeviceID: speakerId,
    Volume: '99',
  });
  const fromChannel = await ha!.wait((m) => m.topic === 'speakerhub/virtual_speaker_1/error' && ha!.messages.indexOf(m) >= mark);
  expect(fromChannel.json).toMatchObject({ event_type: 'InvalidParameter', command: 'set_volume_device', speaker: 'virtual_speaker_1' });

  // Commands that name no speaker: the hub's entity only.
  mark = ha!.messages.length;
  await bridgeRequest(ha!, ha!.client, 'speakerhub', 'no_such_operation', {});
  const unknown = await ha!.wait((m) => m.topic === 'speakerhub/bridge/error' && ha!.messages.indexOf(m) >= mark);
  expect(unknown.json).toMatchObject({ event_type: 'UnknownOperation', command: 'no_such_operation' });
  expect(unknown.json.speaker).toBeUndefined();
  await ha!.client.publishAsync('speakerhub/nobody_here/set', JSON.stringify({ volume: 3 }), { qos: 1 });
  const nobody = await ha!.wait(
    (m) => m.topic === 'speakerhub/bridge/error' && ha!.messages.indexOf(m) >= mark && m.json?.event_type === 'DeviceNotFound',
  );
  expect(nobody.json.message).toMatch(/nobody_here/);

  // A command that works fires nothing (the last error event is still the one above).
  await ha!.client.publishAsync('speakerhub/virtual_speaker_1/set', JSON.stringify({ volume: 9, transaction: 'ok1' }), { qos: 1 });
  await ha!.wait((m) => m.topic === 'speakerhub/virtual_speaker_1/response' && m.json?.transaction === 'ok1' && m.json.status === 'ok');
  expect(errorsOn('speakerhub/virtual_speaker_1/error', mark)).toEqual([]);
  // Every event's type is one the entities declared (HA drops any other).
  for (const m of ha!.messages.filter((x) => x.topic.endsWith('/error'))) expect(hubEvent.json.event_types).toContain(m.json.event_type);
});

test('the Play on all speakers select shows what plays on every speaker and goes back to none when it stops; Power is on for a reachable idle speaker', async () => {
  const { hubKey, uid } = await start();
  const select = await ha!.wait((m) => m.topic === `homeassistant/select/speakerhub_${hubKey}/play/config`);
  const power = await ha!.wait((m) => m.topic === `homeassistant/switch/${uid}/power/config`);
  expect(select.json.state_topic).toBe('speakerhub/bridge/party');
  const state = (topic: string, from = 0) => ha!.wait((m) => m.topic === topic && ha!.messages.indexOf(m) >= from && !!m.json);

  // Idle: nothing plays; the select reads none, Power reads ON (the speaker is reachable).
  const idle = await state('speakerhub/bridge/party');
  expect(idle.json).toEqual({ state: 'stopped', media: null });
  const speaker = await state('speakerhub/virtual_speaker_1');
  expect(speaker.json.state).toBe('stopped');
  expect(render([{ template: select.json.value_template, variables: { value_json: idle.json } }])).toEqual(['None']);
  expect(render([{ template: power.json.value_template, variables: { value_json: speaker.json } }])).toEqual(['ON']);

  // HA picks an option: the command template sends its PersistentID; the state says its title.
  const option = select.json.options[0] as string;
  const [command] = render([{ template: select.json.command_template, variables: { value: option } }]);
  let mark = ha!.messages.length;
  await ha!.client.publishAsync(select.json.command_topic, command, { qos: 1 });
  const playing = await ha!.wait((m) => m.topic === 'speakerhub/bridge/party' && ha!.messages.indexOf(m) >= mark && m.json?.state === 'playing');
  expect(render([{ template: select.json.value_template, variables: { value_json: playing.json } }])).toEqual([option]);

  // The music stops (from anywhere): the select goes back to none.
  mark = ha!.messages.length;
  expect((await t!.rest('stop_play')).Result).toBe('true');
  const stopped = await ha!.wait((m) => m.topic === 'speakerhub/bridge/party' && ha!.messages.indexOf(m) >= mark && m.json?.state === 'stopped');
  expect(stopped.json.media).toBeNull();
  expect(render([{ template: select.json.value_template, variables: { value_json: stopped.json } }])).toEqual(['None']);
  const after = await ha!.wait((m) => m.topic === 'speakerhub/virtual_speaker_1' && ha!.messages.indexOf(m) >= mark && m.json?.state === 'stopped');
  expect(render([{ template: power.json.value_template, variables: { value_json: after.json } }])).toEqual(['ON']);
  // An unreachable speaker reads OFF (its entities are unavailable then too).
  expect(render([{ template: power.json.value_template, variables: { value_json: { ...after.json, available: false } } }])).toEqual(['OFF']);
});
