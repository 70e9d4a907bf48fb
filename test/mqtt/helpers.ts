import { readFile, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectAsync, type IClientOptions, type MqttClient } from 'mqtt';
import type { SpeakerHub } from '../../src/hub';
import type { HubConfigInput } from '../../src/hub-config';
import type { Clock } from '../../src/core/clock';
import { MqttExtension, type MqttExtensionOptions } from '../../src/mqtt/extension';
import type { Operation } from '../../src/operations/table';
import { createTestHub, SHARED_SAMPLES, TEST_TOKEN } from '../helpers/hub';

export interface MqttTestHub {
  hub: SpeakerHub;
  ext: MqttExtension;
  base: string;
  logs: string[];
  uuid: string;
  /** The embedded broker's keys (empty when MQTT is off). */
  keys: { publishKey: string; subscribeKey: string };
  /** mqtt://127.0.0.1:port of the embedded broker (undefined with an external one). */
  url?: string;
  rest(name: string, params?: Record<string, string>): Promise<any>;
  session: string;
  close(): Promise<void>;
}

/** A real hub on loopback with the MQTT extension (on, embedded broker on a free port, unless config says otherwise). */
export async function startMqttHub(
  config: HubConfigInput = {},
  options: { clock?: Clock; dataDir?: string; mqtt?: MqttExtensionOptions } = {},
): Promise<MqttTestHub> {
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'speakerhub-mqtt-')));
  const ext = new MqttExtension(options.mqtt);
  const { hub, logs } = await createTestHub(
    { ...config, mqtt: { enabled: true, port: 0, host: '127.0.0.1', ...config.mqtt } },
    { dataDir, clock: options.clock, extensions: [ext] },
  );
  await hub.start();
  const base = hub.url!;
  const get = async (path: string): Promise<any> => (await fetch(base + path, { headers: { Authorization: `Bearer ${TEST_TOKEN}` } })).json();
  const init = await get('/api/v1/init_session');
  const t: MqttTestHub = {
    hub,
    ext,
    base,
    logs,
    uuid: init.HKWHubUUID,
    keys: ext.status?.keys ?? { publishKey: '', subscribeKey: '' },
    url: ext.brokerAddress ? `mqtt://127.0.0.1:${ext.brokerAddress.port}` : undefined,
    session: init.SessionToken,
    async rest(name, params = {}) {
      return get(`/api/v1/${name}?${new URLSearchParams({ SessionToken: t.session, ...params })}`);
    },
    async close() {
      await hub.stop();
      if (!options.dataDir) await rm(dataDir, { recursive: true, force: true, maxRetries: 5 });
    },
  };
  return t;
}

/** A client that records every message and waits for the ones a test expects. */
export class Probe {
  readonly messages: { topic: string; text: string; json?: any; retain: boolean }[] = [];
  private waiters: { match: (m: Probe['messages'][number]) => boolean; resolve: (m: Probe['messages'][number]) => void }[] = [];

  constructor(readonly client: MqttClient) {
    client.on('message', (topic, payload, packet) => {
      const text = payload.toString();
      let json: any;
      try {
        json = JSON.parse(text);
      } catch {
        /* not JSON */
      }
      const m = { topic, text, json, retain: packet.retain };
      this.messages.push(m);
      this.waiters = this.waiters.filter((w) => {
        if (!w.match(m)) return true;
        w.resolve(m);
        return false;
      });
    });
  }

  static async connect(url: string, opts: IClientOptions): Promise<Probe> {
    return new Probe(await connectAsync(url, { reconnectPeriod: 0, connectTimeout: 5000, ...opts }));
  }

  /** The first message (already received or coming) that matches. */
  wait(match: (m: Probe['messages'][number]) => boolean, timeoutMs = 10_000, what = 'message'): Promise<Probe['messages'][number]> {
    const seen = this.messages.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), timeoutMs);
      timer.unref();
      this.waiters.push({
        match,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
      });
    });
  }

  end(): Promise<void> {
    return new Promise((r) => this.client.end(true, {}, () => r()));
  }

  /**
   * What a client subscribing now gets on `topic` (a new client, then gone). A probe that
   * subscribed while the hub was still publishing gets a message live, RETAIN clear (MQTT 3.1.1
   * §3.3.1.3): whether the hub retained it is what a later subscriber sees.
   */
  static async retained(url: string, opts: IClientOptions, topic: string): Promise<Probe['messages'][number]> {
    const late = await Probe.connect(url, opts);
    try {
      await late.client.subscribeAsync(topic);
      return await late.wait((m) => m.topic === topic, 10_000, `the retained message on ${topic}`);
    } finally {
      await late.end();
    }
  }
}

let tx = 0;
/** Publishes a command on the channel and waits for its response (matched by transaction). */
export async function channelCommand(p: Probe, writer: MqttClient, channel: string, command: Record<string, unknown>): Promise<any> {
  const transaction = `t${++tx}`;
  const answer = p.wait(
    (m) => m.topic === channel && m.json?.transaction === transaction && 'ResponseOf' in m.json,
    15_000,
    `response to ${String(command.Command)}`,
  );
  await writer.publishAsync(channel, JSON.stringify({ ...command, transaction }), { qos: 1 });
  return (await answer).json;
}

/** Publishes a bridge request and waits for its response. */
export async function bridgeRequest(p: Probe, writer: MqttClient, base: string, op: string, params: Record<string, unknown> | string): Promise<any> {
  const transaction = `b${++tx}`;
  const answer = p.wait(
    (m) => m.topic === `${base}/bridge/response/${op}` && m.json?.transaction === transaction,
    15_000,
    `bridge response to ${op}`,
  );
  const payload = typeof params === 'string' ? params : JSON.stringify({ ...params, transaction });
  await writer.publishAsync(`${base}/bridge/request/${op}`, payload, { qos: 1 });
  return (await answer).json;
}

/** A loopback web server with one WAV file (what play_web_media plays). */
export async function startWebMedia(): Promise<{ url: string; close(): Promise<void> }> {
  const wav = await readFile(join(SHARED_SAMPLES, 'sample-tone-1-morning-chime.wav'));
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': wav.length });
    res.end(wav);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/tone.wav`,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

export interface Fixture {
  session: string;
  deviceIds: string[];
  persistentId: string;
  webUrl: string;
  /** Set by prepareFor for announcement_status: an announcement the hub knows. */
  announcementId?: string;
}

/** Parameters that let each operation succeed, derived from its parameter names. */
export function validParams(op: Operation, f: Fixture): Record<string, string> {
  const values: Record<string, string> = {
    DeviceID: f.deviceIds[0],
    DeviceIDList: f.deviceIds.join(','),
    PersistentID: f.persistentId,
    MediaUrl: f.webUrl,
    Text: 'Hello from MQTT',
    Volume: '21',
    Mute: 'false',
    Power: 'on',
    Party: 'on',
    Priority: '100',
    ...(f.announcementId ? { AnnouncementID: f.announcementId } : {}),
  };
  // announce takes exactly one source: speak the text.
  const skip = op.name === 'announce' ? new Set(['MediaUrl', 'PersistentID']) : new Set<string>();
  const out: Record<string, string> = {};
  for (const k of Object.keys(op.params.shape)) if (values[k] !== undefined && !skip.has(k)) out[k] = values[k];
  return out;
}

/**
 * Puts the hub in a state where the operation can succeed (through REST, so the MQTT call
 * under test is the only one that changes anything): resumes need a paused hub media, a
 * pause needs a playback, session-target plays need a speaker in the session.
 */
export async function prepareFor(op: Operation, t: MqttTestHub, f: Fixture): Promise<void> {
  await t.rest('stop_play');
  await t.rest('add_device_to_session', { DeviceID: f.deviceIds[0] });
  if (op.name === 'announcement_status') {
    const a = await t.rest('announce', { Text: 'Hello from MQTT' });
    expect(a.Result).toBe('true');
    f.announcementId = a.AnnouncementID;
  }
  if (op.name.startsWith('resume_') || op.name === 'pause_play') {
    const r = await t.rest('play_hub_media_party_mode', { PersistentID: f.persistentId });
    expect(r.Result).toBe('true');
    if (op.name.startsWith('resume_')) expect((await t.rest('pause_play')).Result).toBe('true');
  }
}
