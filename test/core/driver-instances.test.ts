/**
 * Two drivers of one kind (two UPnP interfaces, two Snapcast setups) in one hub: each must
 * get its own speakers when the engine starts a group. The registry once keyed drivers by
 * name, so the second driver received the first one's speakers too.
 */
import { EventEmitter } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { systemClock } from '../../src/core/clock';
import { digitId, type DriverEvents, type MediaRequest, type Speaker, type SpeakerDriver } from '../../src/drivers/driver';
import { VirtualSpeaker } from '../../src/drivers/virtual/virtual-speaker';
import { createHub, type SpeakerHub } from '../../src/hub';
import { createLogger } from '../../src/logger';
import { ensureSampleMedia } from '../../src/media/samples';
import { SHARED_SAMPLES, TEST_TOKEN } from '../helpers/hub';

/** A driver that starts its speakers as a group and records which speakers each call got. */
class GroupingDriver extends EventEmitter<DriverEvents> implements SpeakerDriver {
  readonly name = 'grouping';
  readonly calls: string[][] = [];
  private readonly list: VirtualSpeaker[];

  constructor(tag: string) {
    super();
    this.list = [1, 2].map(
      (i) =>
        new VirtualSpeaker(
          digitId(`grouping:${tag}:${i}`),
          {
            name: `${tag} ${i}`,
            groupName: tag,
            groupId: digitId(`grouping:${tag}`, 10),
            modelName: 'test',
            version: '1',
            role: 21,
            macAddress: '',
            ipAddress: '127.0.0.1',
            port: 0,
            wifiSignalStrength: 0,
          },
          20,
          systemClock,
        ),
    );
  }

  async start(): Promise<void> {
    for (const s of this.list) this.emit('speakerAdded', s);
  }
  async stop(): Promise<void> {
    await Promise.all(this.list.map((s) => s.stop()));
  }
  speakers(): Speaker[] {
    return [...this.list];
  }
  ids(): string[] {
    return this.list.map((s) => s.id).sort();
  }

  async playGroup(speakers: Speaker[], media: MediaRequest): Promise<PromiseSettledResult<void>[]> {
    this.calls.push(speakers.map((s) => s.id).sort());
    return Promise.allSettled(
      speakers.map((s) => (this.list.includes(s as VirtualSpeaker) ? s.play(media) : Promise.reject(new Error('not my speaker')))),
    );
  }
}

describe('two drivers of one kind', () => {
  let hub: SpeakerHub;
  let dataDir: string;
  const a = new GroupingDriver('A');
  const b = new GroupingDriver('B');

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'speakerhub-test-'));
    await ensureSampleMedia(SHARED_SAMPLES);
    hub = createHub(
      {
        dataDir,
        speakers: { virtual: { count: 0 } },
        media: { samples: false, folders: [SHARED_SAMPLES] },
        server: { host: '127.0.0.1', port: 0, token: TEST_TOKEN },
      },
      { drivers: [a, b], logger: createLogger({ level: 'silent', stream: new Writable({ write: (_c, _e, cb) => cb() }) }) },
    );
    await hub.start();
  });

  afterAll(async () => {
    await hub?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  async function op(name: string, params: Record<string, string> = {}): Promise<any> {
    const get = async (path: string) => (await fetch(hub.url + path, { headers: { Authorization: `Bearer ${TEST_TOKEN}` } })).json() as Promise<any>;
    const session = (await get('/api/v1/init_session')).SessionToken;
    return get(`/api/v1/${name}?${new URLSearchParams({ SessionToken: session, ...params })}`);
  }

  test('a party play gives each driver instance its own speakers, and all four play', async () => {
    expect((await op('device_count')).DeviceCount).toBe('4');
    const [media] = (await op('media_list')).MediaList;
    expect((await op('play_hub_media_party_mode', { PersistentID: media.PersistentID })).Result).toBe('true');
    expect(a.calls).toEqual([a.ids()]);
    expect(b.calls).toEqual([b.ids()]);
    const list = (await op('device_list')).DeviceList as { IsPlaying: boolean }[];
    expect(list.map((d) => d.IsPlaying)).toEqual([true, true, true, true]);
    await op('stop_play');
  });
});
