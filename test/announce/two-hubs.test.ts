/**
 * Two hubs in one process (Node-RED or Homebridge may embed several): each owns its tag
 * reader, so one hub's stop never breaks the other's scan in progress.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHub } from '../helpers/hub';

const FILES = 40;

test("one hub's stop does not kill the other's metadata reads", async () => {
  const music = mkdtempSync(join(tmpdir(), 'speakerhub-two-hubs-'));
  for (let i = 0; i < FILES; i++) copyFileSync(join(__dirname, '../media/fixtures/untagged-tone.mp3'), join(music, `tone-${i}.mp3`));
  const a = await startHub({ media: { samples: false, folders: [music] }, speakers: { virtual: { count: 1 } } });
  const b = await startHub({ media: { samples: false, folders: [music] }, speakers: { virtual: { count: 1 } } });
  try {
    expect(b.hub.library.list()).toHaveLength(FILES);
    // B rescans (its reads are in flight in a helper process) while A stops.
    const rescan = b.hub.library.scan();
    await a.close();
    await rescan;
    expect(b.hub.library.list()).toHaveLength(FILES);
  } finally {
    await b.close();
    rmSync(music, { recursive: true, force: true });
  }
});
