import { InvalidArgumentError, type Command } from 'commander';
import type { FlagConfig } from '../cli/hub-command';
import type { HubConfig } from '../hub-config';
import { lazyExtension } from '../extensions/lazy';
import type { DlnaExtension } from './extension';

/**
 * `speakerhub hub`'s DLNA part: `--dlna` (config dlna.enabled) and `--dlna-port`. The
 * extension's code loads only when DLNA is on; nothing multicasts otherwise.
 */
export function dlnaHubOptions(cmd: Command): (flags: Record<string, unknown>) => FlagConfig {
  cmd
    .option('--dlna', 'publish every speaker as a DLNA/UPnP MediaRenderer (SSDP on --interface)')
    .option('--dlna-port <port>', 'TCP port of the DLNA renderers (descriptions, control, events; default: any free port)', (v: string) => {
      if (!/^\d+$/.test(v) || Number(v) > 65535) throw new InvalidArgumentError('--dlna-port must be an integer from 0 to 65535.');
      return Number(v);
    });
  let ext: (ReturnType<typeof lazyExtension> & { readonly loaded?: DlnaExtension }) | undefined;
  return (flags) => ({
    overrides: { dlna: { enabled: flags.dlna === true ? true : undefined, port: flags.dlnaPort } },
    labels: { 'dlna.port': '--dlna-port' },
    extensions: (config: HubConfig) => {
      if (!config.dlna.enabled) return [];
      ext = lazyExtension('dlna', async () => new (await import('./extension')).DlnaExtension()) as typeof ext;
      return [ext!];
    },
    banner: () => dlnaBannerLines(ext?.loaded),
  });
}

export function dlnaBannerLines(ext: DlnaExtension | undefined): string[] {
  const s = ext?.status;
  if (!s) return [];
  return [`  DLNA:       ${s.renderers} renderers on ${s.interfaceName} (${s.address}), ${s.url}/`];
}
