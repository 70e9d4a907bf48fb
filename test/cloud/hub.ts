import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CloudLinkExtension, type LinkState } from '../../src/cloud-link/link-extension';
import type { SpeakerHub } from '../../src/hub';
import { createTestHub } from '../helpers/hub';
import { PASSWORD } from './helpers';

export interface LinkedHub {
  hub: SpeakerHub;
  link: CloudLinkExtension;
  dataDir: string;
  /** The hub's local REST base URL. */
  base: string;
  logs: string[];
  /** Resolves when the link reaches the state (at once if it is there). */
  waitFor(state: LinkState): Promise<void>;
  close(): Promise<void>;
}

/**
 * A real hub (virtual speakers, sample media) linked to the cloud as `speakerhub hub
 * --cloud <url> --cloud-username U --cloud-password-file F` runs it, unless `dataDir`
 * already holds a sign-in (then only --cloud).
 */
export async function startLinkedHub(
  cloud: string,
  username: string,
  o: { dataDir?: string; withPassword?: boolean; speakers?: number; reconnectBaseMs?: number } = {},
): Promise<LinkedHub> {
  const dataDir = o.dataDir ?? (await mkdtemp(join(tmpdir(), 'speakerhub-linked-')));
  let passwordFile: string | undefined;
  if (o.withPassword !== false) {
    passwordFile = join(dataDir, 'cloud-password');
    await writeFile(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  }
  const link = new CloudLinkExtension();
  const { hub, logs } = await createTestHub(
    {
      speakers: { virtual: { count: o.speakers ?? 3 } },
      cloud: {
        url: cloud,
        username: passwordFile ? username : undefined,
        passwordFile,
        heartbeatSeconds: 1,
        reconnectBaseMs: o.reconnectBaseMs ?? 50,
      },
    },
    { dataDir, extensions: [link] },
  );
  await hub.start();
  const waitFor = (state: LinkState) =>
    new Promise<void>((resolve) => {
      if (link.state === state) return resolve();
      const off = link.onState((s) => {
        if (s === state) {
          off();
          resolve();
        }
      });
    });
  return {
    hub,
    link,
    dataDir,
    base: hub.url!,
    logs,
    waitFor,
    async close() {
      await hub.stop();
      if (!o.dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}
