import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { configSchemaJsonText } from '../../src/homebridge/config-schema-json';
import { parsePlatformConfig } from '../../src/homebridge/config';
import { embeddedHubConfig } from '../../src/homebridge/hub-config';
import { parseConfig } from '../../src/hub-config';
import { announceParams } from '../../src/homebridge/switches';
import type { HubReadModel } from '../../src/hub-client/read-model';
import { OPERATIONS_BY_NAME } from '../../src/operations/table';

describe('config.schema.json (the Homebridge UI form)', () => {
  test('is what the zod schema generates (run `npm run homebridge:schema` after changing the schema)', () => {
    const onDisk = readFileSync(join(__dirname, '..', '..', 'config.schema.json'), 'utf8');
    expect(onDisk).toBe(configSchemaJsonText());
  });

  test('declares the SpeakerHub platform, singular, with every key the plugin reads', () => {
    const json = JSON.parse(configSchemaJsonText());
    expect(json).toMatchObject({ pluginAlias: 'SpeakerHub', pluginType: 'platform', singular: true });
    expect(Object.keys(json.schema.properties)).toEqual(
      expect.arrayContaining(['name', 'hub', 'service', 'defaultMedia', 'speakers', 'announcements', 'partySwitch', 'removeAfterHours']),
    );
    expect(json.schema.properties.service.enum).toEqual(['lightbulb', 'fan', 'switch', 'speaker']);
  });
});

describe('platform configuration', () => {
  test('the bare platform block is valid: embedded hub, lightbulb service', () => {
    const r = parsePlatformConfig({ platform: 'SpeakerHub' });
    expect(r.ok && r.config).toMatchObject({ name: 'SpeakerHub', service: 'lightbulb', hub: { mode: 'embedded' }, partySwitch: false });
  });

  test.each([
    [{ platform: 'SpeakerHub', hub: { mode: 'remote' } }, 'hub.url: is required when hub.mode is "remote"'],
    [{ platform: 'SpeakerHub', service: 'television' }, 'service:'],
    [{ platform: 'SpeakerHub', hub: { prot: 1 } }, 'hub.prot: unknown key'],
    [{ platform: 'SpeakerHub', announcements: [{ name: 'A' }] }, 'announcements.0: needs exactly one of text, mediaUrl, persistentId'],
    [{ platform: 'SpeakerHub', announcements: [{ name: 'A', text: 'x', volume: 51 }] }, 'announcements.0.volume:'],
    [{ platform: 'SpeakerHub', speakers: [{ service: 'fan' }] }, 'speakers.0: needs deviceId or name'],
    [{ platform: 'SpeakerHub', announcements: [{ name: 'A', text: 'x', mode: 'mix' }] }, 'announcements.0.mode:'],
    [{ platform: 'SpeakerHub', announcements: [{ name: 'A', text: 'x', duckLevel: 6 }] }, 'announcements.0.duckLevel:'],
  ])('%j is refused naming the key', (input, message) => {
    const r = parsePlatformConfig(input);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.problems.join('\n')).toContain(message);
  });

  test("an announcement preset's music choice (mode, duckLevel, fadeMs) becomes the announce operation's Mode, DuckLevel, FadeMs, which it accepts", () => {
    const r = parsePlatformConfig({
      platform: 'SpeakerHub',
      announcements: [{ name: 'Door', text: 'Door', mode: 'duck', duckLevel: -20, fadeMs: 300 }],
    });
    if (!r.ok) throw new Error(r.problems.join());
    const p = announceParams(r.config.announcements![0], {} as HubReadModel);
    expect(p).toEqual({ Text: 'Door', Mode: 'duck', DuckLevel: -20, FadeMs: 300 });
    const wire = Object.fromEntries(Object.entries(p).map(([k, v]) => [k, String(v)]));
    expect(OPERATIONS_BY_NAME.get('announce')!.params.parse(wire)).toMatchObject({ Mode: 'duck', DuckLevel: -20, FadeMs: 300 });
  });

  test('Homebridge child-bridge settings (_bridge) pass', () => {
    expect(parsePlatformConfig({ platform: 'SpeakerHub', _bridge: { username: '0E:00:00:00:00:01', port: 51000 } }).ok).toBe(true);
  });

  test('the embedded hub writes only inside the Homebridge storage path and runs no REST server unless asked', () => {
    const r = parsePlatformConfig({ platform: 'SpeakerHub', hub: { drivers: ['upnp'], interface: 'eth0' } });
    if (!r.ok) throw new Error(r.problems.join());
    const hub = parseConfig(embeddedHubConfig(r.config, '/var/lib/homebridge'));
    expect(hub.dataDir).toBe('/var/lib/homebridge/speakerhub');
    expect(hub.server.enabled).toBe(false);
    expect(hub.drivers).toEqual(['upnp']);
    expect(hub.network.interface).toBe('eth0');
  });

  test("hub.mqtt turns the embedded hub's MQTT on (unless its enabled is false); without it the hub runs none", () => {
    const on = (mqtt?: Record<string, unknown>) => {
      const r = parsePlatformConfig({ platform: 'SpeakerHub', hub: { drivers: ['virtual'], ...(mqtt ? { mqtt } : {}) } });
      if (!r.ok) throw new Error(r.problems.join());
      return parseConfig(embeddedHubConfig(r.config, '/x')).mqtt.enabled;
    };
    expect(on()).toBe(false);
    expect(on({ port: 1884 })).toBe(true);
    expect(on({ url: 'mqtt://broker.lan:1883' })).toBe(true);
    expect(on({ enabled: false, port: 1884 })).toBe(false);
  });

  test('hub.mqtt and hub.advanced are form fields (not free-form objects the UI cannot render); no developer footer', () => {
    const json = JSON.parse(configSchemaJsonText()) as any;
    const hub = json.schema.properties.hub.properties;
    expect(Object.keys(hub.mqtt.properties)).toEqual(
      expect.arrayContaining(['enabled', 'url', 'username', 'password', 'port', 'baseTopic', 'haDiscovery']),
    );
    expect(hub.mqtt.properties.url.title).toBe('External broker URL');
    expect(hub.advanced).toMatchObject({ type: 'string', 'x-schema-form': { type: 'textarea' } });
    expect(hub.drivers.items.enum).toEqual(expect.arrayContaining(['virtual', 'upnp', 'snapcast', 'mpd', 'airplay']));
    expect(json.footerDisplay).toBeUndefined();
  });

  test("hub.advanced as the form's JSON text reaches the hub; text that is not a JSON object is refused by name", () => {
    const r = parsePlatformConfig({ platform: 'SpeakerHub', hub: { drivers: ['virtual'], advanced: '{"sessions": {"idleMinutes": 5}}' } });
    expect(r.ok).toBe(true);
    const bad = parsePlatformConfig({ platform: 'SpeakerHub', hub: { drivers: ['virtual'], advanced: '[1, 2]' } });
    expect(bad.ok).toBe(false);
  });

  test('hub.advanced reaches any hub key and is validated by the hub schema', () => {
    const r = parsePlatformConfig({ platform: 'SpeakerHub', hub: { drivers: ['virtual'], advanced: { sessions: { idleMinutes: 5 } } } });
    if (!r.ok) throw new Error(r.problems.join());
    expect(parseConfig(embeddedHubConfig(r.config, '/x')).sessions.idleMinutes).toBe(5);
    const bad = parsePlatformConfig({ platform: 'SpeakerHub', hub: { drivers: ['virtual'], advanced: { sessions: { idle: 5 } } } });
    if (!bad.ok) throw new Error(bad.problems.join());
    expect(() => parseConfig(embeddedHubConfig(bad.config, '/x'))).toThrow(/sessions.idle: unknown key/);
  });
});
