import type { ExtensionContext, HubExtension } from '../extensions/extension';
import { LocalConnection } from '../hub-client/local';
import { HubReadModel } from '../hub-client/read-model';
import { KeyAuth } from './auth';
import { BridgeRequests, OPERATION_NAMES, bridgeResponse, failed, objectPayload } from './bridge';
import { EmbeddedBroker } from './broker';
import { PubsubChannel } from './channel';
import { CommandErrors, namedDeviceIds } from './command-errors';
import type { DispatchResult } from '../operations/dispatch';
import { FriendlyNames } from './friendly-names';
import { HaDiscovery } from './ha-discovery';
import { loadOrCreateKeys, type PubsubKeys } from './keys';
import type { BrokerLink } from './broker-link';
import { EmbeddedLink } from './embedded-link';
import { NetworkWatch, type InterfaceSource } from './network-watch';
import { RateLimitedLog } from './rate-limit';
import { SpeakerTopics } from './speakers';
import { Topics } from './topics';
import { networkInterfaces } from 'node:os';
import type { MediaChoice } from './ha-discovery';

/** The bridge's own request beyond the operation table: forget a speaker that is gone for good. */
const FORGET_SPEAKER = 'forget_speaker';

/** The hub's web page, for Home Assistant's "Visit" link: the advertised or listening host and the REST port. */
function pageUrl(ctx: ExtensionContext): string | undefined {
  const addr = ctx.httpServer?.address();
  if (!addr || typeof addr === 'string') return undefined;
  const configured = ctx.config.mediaServer.advertiseHost ?? ctx.config.server.host;
  const wildcard = !configured || configured === '0.0.0.0' || configured === '::';
  const lan = Object.values(networkInterfaces())
    .flat()
    .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;
  const host = wildcard ? (lan ?? '127.0.0.1') : configured;
  return `http://${host.includes(':') ? `[${host}]` : host}:${addr.port}/`;
}

/** The library as the play selects offer it (read when the configs are published). */
async function libraryChoices(ctx: ExtensionContext, session: string): Promise<MediaChoice[]> {
  const r = await ctx.dispatch('media_list', { SessionToken: session });
  if (!r.ok) return [];
  return (r.body.MediaList as { PersistentID: string; Title: string; Artist?: string }[]).map((m) => ({
    persistentId: m.PersistentID,
    title: m.Title,
    artist: m.Artist,
  }));
}

/** What the terminal banner shows (keys are printed there, never logged). */
export interface MqttStatus {
  mode: 'embedded' | 'external';
  /** mqtt://host:port of the embedded broker's TCP listener, or the external broker's URL. */
  url?: string;
  /** ws://…/mqtt when MQTT over WebSocket runs on the REST port. */
  wsUrl?: string;
  /** The embedded broker could not bind its TCP port. */
  portBusy?: { host: string; port: number };
  channel: string;
  baseTopic: string;
  keys: PubsubKeys;
  dataDir: string;
  uuid: string;
}

/** Events a stalled MQTT link may leave waiting before the view is rebuilt from scratch. */
const MAX_QUEUED_EVENTS = 10_000;

export interface MqttExtensionOptions {
  /** Where the host's interfaces are read (default: os.networkInterfaces; tests inject one). */
  interfaces?: InterfaceSource;
}

/**
 * The MQTT front end: the spec's publish/subscribe mode on one channel topic and a
 * zigbee2mqtt-style bridge, over the embedded aedes broker or an external one. It reaches
 * the hub only through the extension context.
 */
export class MqttExtension implements HubExtension {
  readonly name = 'mqtt';
  private broker?: EmbeddedBroker;
  private link?: BrokerLink;
  private unfollow?: () => void;
  private local?: LocalConnection;
  private ctx?: ExtensionContext;
  private names?: FriendlyNames;
  private speakerTopics?: SpeakerTopics;
  private _status?: MqttStatus;
  private watch?: NetworkWatch;

  constructor(private readonly options: MqttExtensionOptions = {}) {}

  /** Set once started (undefined when MQTT is off). */
  get status(): MqttStatus | undefined {
    return this._status;
  }

  /** The embedded broker's TCP address (tests, the banner). */
  get brokerAddress(): { host: string; port: number } | undefined {
    return this.broker?.address;
  }

  get connected(): boolean {
    return !!this.link?.connected;
  }

  async start(ctx: ExtensionContext): Promise<void> {
    try {
      await this.startSteps(ctx);
    } catch (e) {
      // The hub only stops extensions that started: undo what this one had begun.
      await this.stop().catch(() => undefined);
      throw e;
    }
  }

  private async startSteps(ctx: ExtensionContext): Promise<void> {
    const { mqtt: cfg, pubsub } = ctx.config;
    if (!cfg.enabled) return;
    this.ctx = ctx;
    const log = ctx.logger;
    const keys = await loadOrCreateKeys(ctx.config.dataDir, pubsub);
    const topics = new Topics(cfg.baseTopic, cfg.haDiscoveryPrefix);
    const clientId = cfg.clientId ?? `speakerhub-${ctx.uuid.slice(0, 8)}`;
    const external = cfg.url || undefined;
    if (!external) {
      this.broker = new EmbeddedBroker({
        auth: new KeyAuth(keys),
        logger: log,
        tcp: { host: cfg.host ?? ctx.config.server.host, port: cfg.port },
        httpServer: cfg.websocket ? ctx.httpServer : undefined,
        wsPath: '/mqtt',
        maxPacketBytes: cfg.maxPayloadBytes,
        maxClients: cfg.maxClients,
        drainTimeoutMs: cfg.drainTimeoutMs,
        hubClientId: clientId,
        isHubTopic: (t) => t !== pubsub.channel && (t.startsWith('$') || topics.isHubTopic(t)),
      });
      await this.broker.start();
      const busy = this.broker.portBusy;
      if (busy) {
        log.warn(
          { host: busy.host, port: busy.port },
          `MQTT port ${busy.port} is in use: the embedded broker runs without TCP (MQTT over WebSocket still works); choose another port with --mqtt-port <port>, or use the broker already there with --mqtt mqtt://127.0.0.1:${busy.port}`,
        );
      }
    }
    const faults = new RateLimitedLog(log);
    const subscriptions = [
      pubsub.channel,
      topics.requests,
      `${topics.base}/+/set`,
      `${topics.base}/+/get`,
      ...(cfg.haDiscovery ? [topics.haStatus] : []),
    ];
    // The embedded broker is attached to in process; mqtt.js is loaded only for an external one.
    const link: BrokerLink = external
      ? new (await import('./client-link')).ClientLink({
          url: external,
          clientId,
          username: cfg.username,
          password: cfg.password,
          caFile: cfg.caFile,
          rejectUnauthorized: cfg.rejectUnauthorized,
          will: { topic: topics.state, payload: JSON.stringify({ state: 'offline' }) },
          subscriptions,
          reconnectMinMs: cfg.reconnectMinMs,
          reconnectMaxMs: cfg.reconnectMaxMs,
          maxConcurrent: cfg.maxConcurrentCommands,
          logger: log,
        })
      : new EmbeddedLink({ broker: this.broker!, subscriptions, maxConcurrent: cfg.maxConcurrentCommands, logger: log });
    this.link = link;
    // The client layer: operations in the bridge's trusted session, events, the read model.
    const local = new LocalConnection(ctx, { logger: log, maxQueued: MAX_QUEUED_EVENTS });
    this.local = local;
    const session = local.sessionToken();
    const model = new HubReadModel();
    await model.resync(local);
    this.names = new FriendlyNames(ctx.config.dataDir, log);
    // Failed commands, for the error event entities: the speakers a command named, by their topic names.
    const errors = new CommandErrors(link, topics);
    const names = this.names;
    const onError = (op: string, params: Record<string, unknown>, result: DispatchResult) =>
      errors.report({ command: op, speakers: namedDeviceIds(params).flatMap((id) => names.known(id) ?? []) }, result);
    const channel = new PubsubChannel(ctx, link, pubsub.channel, faults, onError);
    const requests = new BridgeRequests(ctx, link, topics, session, onError);
    const speakers = new SpeakerTopics(ctx, link, topics, this.names, session, cfg.timeUpdates, model);
    speakers.onError = (source, result) => errors.report(source, result);
    this.speakerTopics = speakers;
    const ha = cfg.haDiscovery
      ? new HaDiscovery(
          link,
          topics,
          ctx.uuid,
          ctx.version,
          () => speakers.list(),
          async () => ({
            configurationUrl: pageUrl(ctx),
            media: await libraryChoices(ctx, session),
          }),
        )
      : undefined;
    if (ha) speakers.onChange(() => void ha.publish());
    // A renamed speaker's entities are re-created under its new name (their entity ids follow it).
    if (ha)
      speakers.onRename((deviceId) => {
        ha.clear(deviceId);
        void ha.publish();
      });

    const info = {
      version: ctx.version,
      hub_uuid: ctx.uuid,
      base_topic: topics.base,
      channel: pubsub.channel,
      broker: external ? 'external' : 'embedded',
      ha_discovery: cfg.haDiscovery,
      operations: OPERATION_NAMES,
      bridge_requests: [FORGET_SPEAKER],
    };

    // bridge/request/forget_speaker {"speaker": name or DeviceID}: a speaker gone for good is
    // forgotten: its retained topics and Home Assistant entities are cleared (zigbee2mqtt's device remove).
    const forgetSpeaker = (payload: Buffer): void => {
      const parsed = objectPayload(payload);
      const transaction = parsed.ok ? parsed.value.transaction : undefined;
      let answer: Record<string, unknown>;
      const refuse = (result: DispatchResult) => {
        errors.report({ command: FORGET_SPEAKER }, result);
        return bridgeResponse(result, transaction);
      };
      if (!parsed.ok) answer = refuse(parsed.result);
      else if (typeof parsed.value.speaker !== 'string')
        answer = refuse(failed('InvalidParameter', 'forget_speaker needs {"speaker": <friendly name or DeviceID>}.', 'speaker'));
      else {
        // The entities go first, then their state topics: see SpeakerTopics.forget.
        const r = speakers.forget(parsed.value.speaker, (deviceId) => ha?.clear(deviceId));
        if (r.ok) {
          log.info({ deviceId: r.deviceId, speakerName: r.name }, 'MQTT: forgot a speaker that is gone');
          answer = { status: 'ok', data: { friendly_name: r.name, device_id: r.deviceId }, ...(transaction !== undefined ? { transaction } : {}) };
        } else answer = refuse(r.result);
      }
      link.publish(topics.response(FORGET_SPEAKER), JSON.stringify(answer), { qos: 1 });
    };

    link.onMessage((topic, payload) => {
      if (topic === pubsub.channel) return channel.handle(payload);
      const c = topics.classify(topic);
      if (!c) return;
      if (c.kind === 'request' && c.op === FORGET_SPEAKER) return forgetSpeaker(payload);
      if (c.kind === 'request') return requests.handle(c.op, payload);
      if (c.kind === 'set') return speakers.set(c.speaker, payload);
      if (c.kind === 'get') return speakers.get(c.speaker);
      if (c.kind === 'ha-status') return ha?.haStatus(payload);
    });
    link.onConnect((reconnect) => {
      if (reconnect) log.info('MQTT link restored');
      link.publish(topics.state, JSON.stringify({ state: 'online' }), { qos: 1, retain: true });
      link.publish(topics.info, JSON.stringify(info), { qos: 1, retain: true });
      speakers.publishAll();
      void ha?.publish();
      channel.announce(reconnect);
    });
    link.onOffline(() => log.warn('MQTT link lost'));

    this.unfollow = local.follow({
      event: (e) => {
        // The model first: the topics read it.
        model.apply(e);
        channel.event(e);
        speakers.event(e);
      },
      // After an overflow (events missed): re-read the hub, then every retained topic again.
      resync: () =>
        void model.resync(local).then(
          () => speakers.publishAll(),
          (err: unknown) => log.warn({ err: String(err) }, 'MQTT: re-reading the hub failed'),
        ),
    });
    await link.start();

    if (cfg.networkWatchMs > 0) {
      const iface = ctx.config.network.interface;
      this.watch = new NetworkWatch({
        intervalMs: cfg.networkWatchMs,
        interfaceName: iface,
        source: this.options.interfaces,
        // Said at loss too: clients on the hub's own host (loopback, the embedded broker) still hear it.
        onLost: () => {
          log.warn({ interface: iface }, 'network lost: the host has no LAN address');
          channel.network('Lost');
        },
        onRestored: (addresses) => {
          log.info({ interface: iface, addresses }, 'network restored');
          channel.network('Restored');
        },
      });
      this.watch.start();
    }

    const port = ctx.httpServer?.address();
    this._status = {
      mode: external ? 'external' : 'embedded',
      url: external
        ? redactUrl(external)
        : this.broker?.address
          ? `mqtt://${displayHost(this.broker.address.host)}:${this.broker.address.port}`
          : undefined,
      wsUrl: !external && cfg.websocket && port && typeof port === 'object' ? `ws://${displayHost(port.address)}:${port.port}/mqtt` : undefined,
      portBusy: this.broker?.portBusy ? { host: this.broker.portBusy.host, port: this.broker.portBusy.port } : undefined,
      channel: pubsub.channel,
      baseTopic: topics.base,
      keys,
      dataDir: ctx.config.dataDir,
      uuid: ctx.uuid,
    };
    log.info({ mode: this._status.mode, url: this._status.url, channel: pubsub.channel, baseTopic: topics.base }, 'MQTT started');
  }

  async stop(): Promise<void> {
    this.speakerTopics?.close();
    this.speakerTopics = undefined;
    this.watch?.stop();
    this.watch = undefined;
    this.unfollow?.();
    this.unfollow = undefined;
    const link = this.link;
    this.link = undefined;
    const ctx = this.ctx;
    // A clean shutdown says offline itself rather than leaving it to the will.
    if (link && ctx) await link.stop({ topic: new Topics(ctx.config.mqtt.baseTopic, '').state, payload: JSON.stringify({ state: 'offline' }) });
    if (this.broker) {
      // aedes forwards on later turns of the event loop: let "offline" reach the subscribers before they are cut.
      for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
      await this.broker.stop();
    }
    this.broker = undefined;
    await this.names?.flush();
    await this.local?.close();
    this.local = undefined;
    this._status = undefined;
  }
}

function displayHost(h: string): string {
  return h === '0.0.0.0' || h === '::' ? '127.0.0.1' : h.includes(':') ? `[${h}]` : h;
}

/** Credentials in a broker URL never reach the log. */
function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = 'redacted';
    return u.toString();
  } catch {
    return url;
  }
}
