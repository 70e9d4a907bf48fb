import { HubUnreachableError, type HubConnection } from '../hub-client/connection';
import { EmbeddedConnection } from '../hub-client/embedded';
import { RemoteConnection } from '../hub-client/remote';
import { embeddedHubConfig } from './embedded-config';
import { redLogger } from './red-logger';
import type { NodeRedApi, RedNode } from './red-types';

export const CONFIG_TYPE = 'speakerhub-config';

/** The editor's settings of a config node (credentials apart). */
export interface ConfigNodeSettings {
  name?: string;
  mode?: 'remote' | 'embedded';
  url?: string;
  [key: string]: unknown;
}

export interface ConfigNode extends RedNode {
  connection: HubConnection;
}

/**
 * `speakerhub-config`: owns the connection to one hub (remote, or a hub it runs itself) and
 * its session; the other nodes only ever call connection.run(). Closing the node (redeploy,
 * removal, shutdown) closes the connection and with it everything it started.
 */
export function registerConfigNode(RED: NodeRedApi): void {
  function SpeakerHubConfigNode(this: ConfigNode, settings: ConfigNodeSettings): void {
    RED.nodes.createNode(this, settings);
    const credentials = this.credentials ?? {};
    const logger = redLogger(
      RED,
      `speakerhub:${settings.name || this.id}`,
      typeof settings.logLevel === 'string' && settings.logLevel ? settings.logLevel : 'info',
    );
    try {
      this.connection =
        settings.mode === 'embedded'
          ? new EmbeddedConnection({
              config: embeddedHubConfig(settings, credentials, { userDir: RED.settings.userDir, nodeId: this.id }),
              logger,
              name: 'node-red',
            })
          : new RemoteConnection({ url: String(settings.url ?? ''), token: credentials.token, logger });
    } catch (e) {
      // A bad setting must not take Node-RED down: the nodes report it on every message.
      const reason = e instanceof Error ? e.message : String(e);
      const failed = Promise.reject(new HubUnreachableError(`The SpeakerHub config node is not usable: ${reason}`));
      failed.catch(() => undefined);
      this.connection = {
        mode: settings.mode === 'embedded' ? 'embedded' : 'remote',
        ready: failed,
        run: () => failed,
        follow: () => () => undefined,
        close: async () => undefined,
      };
    }
    this.connection.ready.catch((e: unknown) => this.error(e instanceof Error ? e.message : String(e)));
    this.on('close', (_removed, done) => {
      this.connection.close().then(done, (e: unknown) => {
        this.error(`stopping the hub connection failed: ${e instanceof Error ? e.message : String(e)}`);
        done();
      });
    });
  }
  RED.nodes.registerType(CONFIG_TYPE, SpeakerHubConfigNode, {
    credentials: { token: { type: 'password' }, voicerssKey: { type: 'password' } },
  });

  // The editor's speaker and media dropdowns (DeviceIDs are 14 digits, PersistentIDs 19).
  RED.httpAdmin.get('/speakerhub/options/:id', RED.auth.needsPermission('speakerhub-config.read'), (req, res) => {
    const node = RED.nodes.getNode(req.params.id) as ConfigNode | null;
    if (!node || node.type !== CONFIG_TYPE) {
      res.status(404).json({ error: 'not-deployed', message: 'Deploy the SpeakerHub config node first.' });
      return;
    }
    Promise.all([node.connection.run('device_list', {}), node.connection.run('media_list', {})]).then(
      ([devices, media]) =>
        res.json({
          speakers: (devices.DeviceList as Record<string, unknown>[]).map((d) => ({ id: d.DeviceID, name: d.DeviceName, active: d.Active })),
          media: (media.MediaList as Record<string, unknown>[]).map((m) => ({ id: m.PersistentID, title: m.Title, artist: m.Artist })),
        }),
      (e: unknown) =>
        res.status(502).json({ error: (e as { code?: string }).code ?? 'HubUnreachable', message: e instanceof Error ? e.message : String(e) }),
    );
  });
}

/** The config node a SpeakerHub node points at through its `hub` property, or an error to report. */
export function hubOf(RED: NodeRedApi, id: unknown): ConfigNode | HubUnreachableError {
  const node = typeof id === 'string' && id ? (RED.nodes.getNode(id) as ConfigNode | null) : null;
  if (!node || !node.connection) return new HubUnreachableError('No SpeakerHub config node is selected (property hub).');
  return node;
}
