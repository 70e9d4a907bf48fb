/**
 * Issue 28, item 4: forget_speaker emptied the speaker's state topics before its discovery
 * configs, so Home Assistant, still holding the entities, rendered every one of their
 * templates against an empty payload (`value_json` undefined) and logged an ERROR for each.
 *
 * The test plays Home Assistant: it follows the discovery configs in the order messages
 * arrive (an entity is created by a config and removed by an empty one) and renders, with
 * Jinja2 (HA's engine), every value template of every entity listening on a topic when a
 * payload arrives there, with `value_json` only when the payload is JSON, as HA does. After
 * forget_speaker, not one render may fail. It runs on the embedded broker (aedes) and on a
 * real mosquitto.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { labSuite } from '../helpers/labs';
import { Probe, startMqttHub, type MqttTestHub } from './helpers';
import { Mosquitto, mosquittoUnavailable, USERS } from './mosquitto';
import type { HubConfigInput } from '../../src/hub-config';

type Message = Probe['messages'][number];
interface Render {
  topic: string;
  entity: string;
  template: string;
  variables: Record<string, unknown>;
}

/** Home Assistant's MQTT discovery, as far as templates go: which entity renders what, on which topic. */
class HaModel {
  /** Config topic → [state topic, template] pairs of that entity. */
  readonly entities = new Map<string, [string, string][]>();
  readonly renders: Render[] = [];

  feed(m: Message): void {
    if (m.topic.startsWith('homeassistant/') && m.topic.endsWith('/config')) {
      if (m.text === '') this.entities.delete(m.topic);
      else this.entities.set(m.topic, templatesOf(m.json));
      return;
    }
    for (const [entity, pairs] of this.entities) {
      for (const [topic, template] of pairs) {
        if (topic !== m.topic) continue;
        // HA parses the payload as JSON; value_json is undefined when it is not JSON (an empty payload).
        const variables: Record<string, unknown> = { value: m.text };
        if (m.json !== undefined) variables.value_json = m.json;
        this.renders.push({ topic, entity, template, variables });
      }
    }
  }

  /** Entities that listen on `topic` now. */
  listeners(topic: string): string[] {
    return [...this.entities].filter(([, pairs]) => pairs.some(([t]) => t === topic)).map(([e]) => e);
  }
}

/** Every (topic, template) a discovery config makes HA render on incoming state. */
function templatesOf(config: any): [string, string][] {
  const pairs: [string, string][] = [];
  if (config.state_topic && config.value_template) pairs.push([config.state_topic, config.value_template]);
  if (config.json_attributes_topic && config.json_attributes_template) pairs.push([config.json_attributes_topic, config.json_attributes_template]);
  for (const a of config.availability ?? []) if (a.value_template) pairs.push([a.topic, a.value_template]);
  if (config.availability_topic && config.availability_template) pairs.push([config.availability_topic, config.availability_template]);
  return pairs;
}

/** Renders with Jinja2 (render-jinja.py): the error text, or undefined, per render. */
function renderErrors(renders: Render[]): (string | undefined)[] {
  const out = JSON.parse(
    execFileSync('/usr/bin/python3', [join(__dirname, 'render-jinja.py')], {
      input: JSON.stringify(renders.map(({ template, variables }) => ({ template, variables }))),
    }).toString(),
  ) as (string | { error: string })[];
  return out.map((r) => (typeof r === 'string' ? undefined : r.error));
}

/**
 * Three speakers, then a restart with two: the third is a ghost, and is forgotten. HA (the
 * model) saw the first hub's configs and keeps them across the restart, as HA does.
 */
async function forgetAndCheck(mqtt: HubConfigInput['mqtt'], connect: (t: MqttTestHub) => Promise<Probe>): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'speakerhub-mqtt-forget-'));
  const ha = new HaModel();
  const probes: Probe[] = [];
  let t: MqttTestHub | undefined;
  const watch = async () => {
    const p = await connect(t!);
    p.client.on('message', () => ha.feed(p.messages.at(-1)!));
    await p.client.subscribeAsync(['homeassistant/#', 'speakerhub/#'], { qos: 1 });
    probes.push(p);
    return p;
  };
  try {
    t = await startMqttHub({ mqtt: { haDiscovery: true, ...mqtt }, speakers: { virtual: { count: 3 } } }, { dataDir });
    const third = (await t.rest('device_list')).DeviceList[2].DeviceID;
    const uid = `speakerhub_${t.uuid.replace(/-/g, '').slice(0, 12)}_${third}`;
    let p = await watch();
    await p.wait((m) => m.topic === 'speakerhub/virtual_speaker_3' && m.json?.state !== undefined, 10_000, 'the third speaker state');
    await p.wait((m) => m.topic === `homeassistant/number/${uid}/volume/config` && m.text !== '', 10_000, 'its volume entity');
    await p.end();
    await t.close();

    t = await startMqttHub({ mqtt: { haDiscovery: true, ...mqtt }, speakers: { virtual: { count: 2 } } }, { dataDir });
    p = await watch();
    await p.wait((m) => m.topic === 'speakerhub/virtual_speaker_3/availability' && m.json?.state === 'offline', 10_000, 'the ghost offline');
    // HA still has the ghost's entities, listening on its state and availability topics.
    const state = 'speakerhub/virtual_speaker_3';
    const availability = `${state}/availability`;
    const ghostEntities = [...ha.entities.keys()].filter((e) => e.includes(uid));
    expect(ghostEntities.length).toBeGreaterThanOrEqual(8);
    expect(ha.listeners(state).length).toBeGreaterThan(3);
    expect(ha.listeners(availability)).toEqual(ghostEntities);
    const before = ha.renders.length;

    await p.client.publishAsync('speakerhub/bridge/request/forget_speaker', JSON.stringify({ speaker: 'virtual_speaker_3', transaction: 'f1' }), {
      qos: 1,
    });
    const done = await p.wait((m) => m.topic === 'speakerhub/bridge/response/forget_speaker' && m.json?.transaction === 'f1');
    expect(done.json).toMatchObject({ status: 'ok', data: { device_id: third } });
    await p.wait((m) => m.topic === state && m.text === '', 10_000, 'its state emptied');
    await p.wait((m) => m.topic === availability && m.text === '', 10_000, 'its availability emptied');
    // Every one of its entities is removed (an empty config), in HA's view too.
    for (const e of ghostEntities) await p.wait((m) => m.topic === e && m.text === '', 10_000, `${e} removed`);
    expect([...ha.entities.keys()].filter((e) => e.includes(uid))).toEqual([]);

    // Every template HA rendered rendered; the live speakers' states gave it real work.
    const errors = renderErrors(ha.renders)
      .map((error, i) => error && { i, after: i >= before, topic: ha.renders[i].topic, entity: ha.renders[i].entity, error })
      .filter(Boolean);
    expect(errors).toEqual([]);
    expect(ha.renders.length).toBeGreaterThan(20);
  } finally {
    for (const p of probes) await p.end();
    await t?.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

describe('forget_speaker and Home Assistant (embedded broker)', () => {
  test('its entities are removed before its state topics are emptied: no template renders against an empty payload', async () => {
    await forgetAndCheck({}, (t) => Probe.connect(t.url!, { username: t.keys.subscribeKey, password: t.keys.publishKey }));
  });
});

labSuite('mosquitto', mosquittoUnavailable())('forget_speaker and Home Assistant (mosquitto)', () => {
  const broker = new Mosquitto();
  beforeAll(() => broker.start());
  afterAll(() => broker.stop());

  test('its entities are removed before its state topics are emptied: no template renders against an empty payload', async () => {
    const url = `mqtt://127.0.0.1:${broker.port}`;
    await forgetAndCheck({ url, username: 'speakerhub', password: USERS.speakerhub }, () =>
      Probe.connect(url, { username: 'homeassistant', password: USERS.homeassistant }),
    );
  });
});
