import type { ExtensionContext, HubExtension } from '../extensions/extension';
import { interfaceAddress } from '../net/interface-address';
import { advertise, type MdnsAdvertisement } from '../net/mdns';
import { macFor } from './entities';
import { EsphomeHubPort } from './hub-port';
import { decodeNoiseKey } from './noise';
import { EsphomeServer } from './server';

export interface EsphomeStatus {
  /** The device's name (ESPHome's hostname-like `name`) and MAC, as Home Assistant sees them. */
  name: string;
  mac: string;
  port: number;
  encrypted: boolean;
  /** esphome.allow as a banner shows it: "any host" or the list. */
  allow: string;
  /** Speakers published (sub-devices), without "All speakers". */
  speakers: number;
  /** Where it is advertised by mDNS; undefined when network.interface is not set. */
  mdns?: { interfaceName: string; address: string; instance: string };
}

/**
 * The ESPHome native API front end (`--esphome`): the hub as an ESPHome device for Home
 * Assistant, its speakers as sub-devices with a media_player each, plus "All speakers" on the
 * hub's own device. Advertised by mDNS (`_esphomelib._tcp`) on network.interface only, and
 * withdrawn at stop; nothing listens or multicasts unless esphome.enabled.
 */
export class EsphomeExtension implements HubExtension {
  readonly name = 'esphome';
  private server?: EsphomeServer;
  private hub?: EsphomeHubPort;
  private mdns?: MdnsAdvertisement;
  private _status?: Omit<EsphomeStatus, 'speakers'>;

  get status(): EsphomeStatus | undefined {
    if (!this._status) return undefined;
    return { ...this._status, speakers: Math.max(0, (this.server?.entities().length ?? 1) - 1) };
  }

  /** The published media_player entities (tests, the banner). */
  entities() {
    return this.server?.entities() ?? [];
  }

  /** Open API connections. */
  get connections(): number {
    return this.server?.connections ?? 0;
  }

  async start(ctx: ExtensionContext): Promise<void> {
    const cfg = ctx.config.esphome;
    if (!cfg.enabled) return;
    const log = ctx.logger;
    const psk = cfg.encryptionKey ? decodeNoiseKey(cfg.encryptionKey) : undefined;
    if (cfg.encryptionKey && !psk) throw new Error('esphome.encryptionKey must be 32 bytes in base64');
    const mac = macFor(ctx.uuid);
    const name = cfg.name ?? `speakerhub-${mac.replace(/:/g, '').slice(-6).toLowerCase()}`;
    try {
      this.hub = new EsphomeHubPort(ctx, log);
      const server = new EsphomeServer(cfg, psk, { name, mac, friendlyName: cfg.friendlyName, version: ctx.version }, this.hub, log);
      this.server = server;
      const port = await server.listen();
      await this.hub.start((c) => server.hubChanged(c));
      let mdns: EsphomeStatus['mdns'];
      const iface = ctx.config.network.interface;
      if (iface) {
        const address = interfaceAddress(iface);
        this.mdns = advertise({
          address,
          name,
          type: 'esphomelib',
          port,
          logger: log,
          // The TXT keys ESPHome devices advertise; Home Assistant takes the MAC from `mac`.
          txt: {
            friendly_name: cfg.friendlyName,
            version: '2025.10.0',
            mac: mac.replace(/:/g, '').toLowerCase(),
            platform: 'host',
            board: 'speakerhub',
            network: 'ethernet',
            project_name: 'speakerhub.hub',
            project_version: ctx.version,
            ...(psk ? { api_encryption: 'Noise_NNpsk0_25519_ChaChaPoly_SHA256' } : {}),
          },
        });
        mdns = { interfaceName: iface, address, instance: this.mdns.name };
      } else {
        log.info('ESPHome: no network.interface (--interface), so no mDNS advertisement; add the hub in Home Assistant by host and port');
      }
      const allow = server.allow.describe();
      this._status = { name, mac, port, encrypted: psk !== undefined, allow, mdns };
      log.info({ port, encrypted: psk !== undefined, allow, name, mac, mdns: mdns?.interfaceName }, 'ESPHome native API listening');
      // Issue 32: a token-less LAN server says so at start (the banner says it too).
      if (!psk)
        log.warn(
          { allow },
          `ESPHome: plaintext, no API token: ${allow === 'any host' ? 'any LAN host' : allow} may control the speakers (esphome.allow; esphome.encryptionKey adds a key)`,
        );
    } catch (e) {
      await this.stop();
      throw e;
    }
  }

  async stop(): Promise<void> {
    this._status = undefined;
    await this.mdns?.stop().catch(() => undefined);
    this.mdns = undefined;
    await this.server?.close().catch(() => undefined);
    this.server = undefined;
    await this.hub?.stop().catch(() => undefined);
    this.hub = undefined;
  }
}
