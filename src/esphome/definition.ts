import { InvalidArgumentError } from 'commander';
import { defineFrontEnd } from '../extensions/front-end';
import { EsphomeConfigSchema } from './config';
import type { EsphomeExtension } from './extension';

/**
 * The ESPHome native API: the hub as an ESPHome device whose sub-devices are the speakers,
 * for Home Assistant's ESPHome integration. On when `esphome.enabled` (`--esphome`); its code
 * loads only then, and nothing listens or multicasts otherwise.
 */
export const esphomeFrontEnd = defineFrontEnd({
  name: 'esphome',
  summary: 'every speaker a media_player of an ESPHome device (native API, mDNS) for Home Assistant',
  config: { esphome: EsphomeConfigSchema },
  enabledBy: (parts) => parts.esphome.enabled,
  flags: {
    register(hub) {
      hub
        .option('--esphome', 'serve the ESPHome native API: every speaker a Home Assistant media_player (mDNS on --interface)')
        .option('--esphome-port <port>', 'TCP port of the ESPHome native API (default 6053)', (v: string) => {
          if (!/^\d+$/.test(v) || Number(v) > 65535) throw new InvalidArgumentError('--esphome-port must be an integer from 0 to 65535.');
          return Number(v);
        });
    },
    toConfig: (flags) => ({
      overrides: { esphome: { enabled: flags.esphome === true ? true : undefined, port: flags.esphomePort } },
      labels: { 'esphome.port': '--esphome-port' },
    }),
  },
  banner: (ext) => esphomeBannerLines(ext as EsphomeExtension | undefined),
  load: async () => {
    const { EsphomeExtension } = await import('./extension');
    return () => new EsphomeExtension();
  },
});

export function esphomeBannerLines(ext: EsphomeExtension | undefined): string[] {
  const s = ext?.status;
  if (!s) return [];
  const players = `${s.speakers} speaker${s.speakers === 1 ? '' : 's'} + All speakers`;
  const security = s.encrypted
    ? 'encrypted (Home Assistant asks for the key: esphome.encryptionKey in your config)'
    : 'plaintext, no token (set esphome.encryptionKey to encrypt)';
  const found = s.mdns ? `advertised on ${s.mdns.interfaceName} as ${s.mdns.instance}` : 'not advertised (no --interface): add it by host and port';
  const who = s.allow === 'any host' ? 'any LAN host' : s.allow;
  const access = s.encrypted
    ? `              key required; ${who} may connect (esphome.allow)`
    : `              no API token: ${who} may control the speakers (esphome.allow)`;
  return [`  ESPHome:    port ${s.port}, ${players}, ${security}`, access, `              ${found}`];
}
