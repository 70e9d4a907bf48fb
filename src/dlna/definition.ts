import { InvalidArgumentError } from 'commander';
import { defineFrontEnd } from '../extensions/front-end';
import { DlnaConfigSchema } from './config';
import type { DlnaExtension } from './extension';

/**
 * DLNA renderers: every speaker published as a UPnP MediaRenderer. On when `dlna.enabled`
 * (`--dlna`); its code loads only then, and nothing multicasts otherwise.
 */
export const dlnaFrontEnd = defineFrontEnd({
  name: 'dlna',
  summary: 'every speaker published as a DLNA/UPnP MediaRenderer (SSDP, SOAP control, GENA)',
  config: { dlna: DlnaConfigSchema },
  enabledBy: (parts) => parts.dlna.enabled,
  flags: {
    register(hub) {
      hub
        .option('--dlna', 'publish every speaker as a DLNA/UPnP MediaRenderer (SSDP on --interface)')
        .option('--dlna-port <port>', 'TCP port of the DLNA renderers (descriptions, control, events; default: any free port)', (v: string) => {
          if (!/^\d+$/.test(v) || Number(v) > 65535) throw new InvalidArgumentError('--dlna-port must be an integer from 0 to 65535.');
          return Number(v);
        });
    },
    toConfig: (flags) => ({
      overrides: { dlna: { enabled: flags.dlna === true ? true : undefined, port: flags.dlnaPort } },
      labels: { 'dlna.port': '--dlna-port' },
    }),
  },
  banner: (ext) => dlnaBannerLines(ext as DlnaExtension | undefined),
  load: async () => {
    const { DlnaExtension } = await import('./extension');
    return () => new DlnaExtension();
  },
});

export function dlnaBannerLines(ext: DlnaExtension | undefined): string[] {
  const s = ext?.status;
  if (!s) return [];
  return [
    `  DLNA:       ${s.renderers} renderer${s.renderers === 1 ? '' : 's'} on ${s.interfaceName} (${s.address}), ${s.url}/`,
    `              no API token: ${s.allow === 'any host' ? 'any LAN host' : s.allow} may control the speakers (dlna.allow)`,
    ...(s.mediaServer ? [`              media library shared as "${s.mediaServer}" (dlna.mediaServer)`] : []),
  ];
}
