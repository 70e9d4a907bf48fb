import type { Command } from 'commander';
import { defineFrontEnd } from '../extensions/front-end';
import { CloudLinkConfigSchema } from './config';

/** The hub's cloud flags. */
export function addCloudHubOptions(hub: Command): Command {
  return hub
    .option('--cloud <url>', 'link the hub to SpeakerHub Cloud at this URL (after `speakerhub account signin`)')
    .option('--cloud-username <name>', 'sign in to the cloud as this user (with --cloud-password-file)')
    .option('--cloud-password-file <file>', 'file holding the cloud password');
}

/** Config overrides from the hub's cloud flags. */
export function cloudOverrides(flags: object): Record<string, unknown> {
  const f = flags as { cloud?: string; cloudUsername?: string; cloudPasswordFile?: string };
  return { url: f.cloud, username: f.cloudUsername, passwordFile: f.cloudPasswordFile };
}

/**
 * Cloud mode: the hub's link to SpeakerHub Cloud. On when `cloud.url` is set (`--cloud`);
 * the link's code (and ws) loads only then.
 */
export const cloudLinkFrontEnd = defineFrontEnd({
  name: 'cloud-link',
  summary: "the hub's link to SpeakerHub Cloud (its users' requests relayed to the hub)",
  config: { cloud: CloudLinkConfigSchema },
  enabledBy: (parts) => parts.cloud.url !== undefined,
  flags: {
    register: (hub) => void addCloudHubOptions(hub),
    toConfig: (flags) => ({
      overrides: { cloud: cloudOverrides(flags) },
      labels: { 'cloud.url': '--cloud', 'cloud.username': '--cloud-username', 'cloud.passwordFile': '--cloud-password-file' },
    }),
  },
  load: async () => {
    const { CloudLinkExtension } = await import('./link-extension');
    return () => new CloudLinkExtension();
  },
});
