import { EventEmitter } from 'node:events';
import { createServer, type Server } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createHub, type SpeakerHub } from '../../src/hub';
import { ManualClock } from '../../src/core/clock';
import type { DriverEvents, SpeakerDriver } from '../../src/drivers/driver';
import type { ExtensionContext, HubExtension } from '../../src/extensions/extension';
import type { WireEvent } from '../../src/extensions/wire-events';
import { createLogger } from '../../src/logger';
import { ensureSampleMedia } from '../../src/media/samples';
import { OPERATIONS_BY_NAME } from '../../src/operations/table';
import { SHARED_SAMPLES, startHub, TEST_TOKEN } from '../helpers/hub';

/** A driver with no speakers that records whether it runs. */
class RecordingDriver extends EventEmitter<DriverEvents> implements SpeakerDriver {
  readonly name = 'recording';
  running = false;
  async start() {
    this.running = true;
  }
  async stop() {
    this.running = false;
  }
  speakers() {
    return [];
  }
}

/** An extension that records its lifecycle and keeps its context for the test. */
class RecordingExtension implements HubExtension {
  ctx?: ExtensionContext;
  running = false;
  constructor(
    readonly name: string,
    private readonly fail: { start?: boolean; stop?: boolean } = {},
  ) {}
  async start(ctx: ExtensionContext) {
    if (this.fail.start) throw new Error(`${this.name} cannot start`);
    this.ctx = ctx;
    this.running = true;
  }
  async stop() {
    this.running = false;
    if (this.fail.stop) throw new Error(`${this.name} cannot stop`);
  }
}

function listen(): Promise<Server> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => resolve(s));
  });
}

async function refused(url: string): Promise<boolean> {
  try {
    await fetch(url);
    return false;
  } catch (e) {
    return /ECONNREFUSED/.test(String((e as { cause?: unknown }).cause ?? e));
  }
}

async function makeHub(extra: { port?: number; drivers?: SpeakerDriver[]; extensions?: HubExtension[]; clock?: ManualClock } = {}) {
  await ensureSampleMedia(SHARED_SAMPLES);
  const dataDir = await mkdtemp(join(tmpdir(), 'speakerhub-lifecycle-'));
  const logs: string[] = [];
  const stream = new Writable({
    write(chunk, _e, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  const hub = createHub(
    { dataDir, media: { samples: false, folders: [SHARED_SAMPLES] }, server: { host: '127.0.0.1', port: extra.port ?? 0, token: TEST_TOKEN } },
    { drivers: extra.drivers, extensions: extra.extensions, clock: extra.clock, logger: createLogger({ level: 'debug', stream }) },
  );
  return { hub, logs, cleanup: () => rm(dataDir, { recursive: true, force: true }) };
}

describe('hub start and stop', () => {
  test('a busy REST port fails the start and undoes everything that had started', async () => {
    const blocker = await listen();
    const port = (blocker.address() as { port: number }).port;
    const driver = new RecordingDriver();
    const { hub, cleanup } = await makeHub({ port, drivers: [driver] });
    try {
      let mediaUrl = '';
      driver.start = async () => {
        driver.running = true;
        mediaUrl = hub.mediaServer.baseUrl;
      };
      await expect(hub.start()).rejects.toThrow(/EADDRINUSE/);
      expect(mediaUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(driver.running).toBe(false);
      expect(await refused(`${mediaUrl}/`)).toBe(true);
      // Nothing is left half-started: once the port is free the same hub object starts cleanly.
      await new Promise<void>((r) => blocker.close(() => r()));
      await hub.start();
      expect(driver.running).toBe(true);
      expect(hub.url).toBe(`http://127.0.0.1:${port}`);
      await hub.stop();
      expect(driver.running).toBe(false);
    } finally {
      blocker.close();
      await cleanup();
    }
  });

  test('an extension that fails to start stops the REST server and the extensions before it', async () => {
    const first = new RecordingExtension('first');
    const broken = new RecordingExtension('broken', { start: true });
    const { hub, cleanup } = await makeHub({ extensions: [first], drivers: [] });
    hub.use(broken);
    let restUrl = '';
    first.start = async function (ctx) {
      RecordingExtension.prototype.start.call(this, ctx);
      restUrl = hub.url!;
    };
    try {
      await expect(hub.start()).rejects.toThrow('broken cannot start');
      expect(restUrl).toMatch(/^http:/);
      expect(first.running).toBe(false);
      expect(await refused(`${restUrl}/api/v1/openapi.json`)).toBe(true);
      expect(hub.url).toBeUndefined();
    } finally {
      await cleanup();
    }
  });

  test('stop runs every step even when one fails, then reports the failure', async () => {
    const driver = new RecordingDriver();
    const failing = new RecordingExtension('failing', { stop: true });
    const after = new RecordingExtension('after');
    const { hub, logs, cleanup } = await makeHub({ drivers: [driver], extensions: [failing, after] });
    try {
      await hub.start();
      const url = hub.url!;
      expect(failing.running && after.running && driver.running).toBe(true);
      await expect(hub.stop()).rejects.toThrow(AggregateError);
      expect(after.running).toBe(false);
      expect(driver.running).toBe(false);
      expect(await refused(`${url}/api/v1/openapi.json`)).toBe(true);
      expect(logs.join('')).toContain('failing cannot stop');
    } finally {
      await cleanup();
    }
  });
});

describe('the event bus guards the core against its listeners', () => {
  test('a throwing listener neither fails a play nor the hub stop; the fault is logged', async () => {
    const t = await startHub({ speakers: { virtual: { count: 2 } } });
    let closed = false;
    try {
      t.hub.core.events.on('playbackState', () => {
        throw new Error('front-end bug');
      });
      const media = (await t.op('media_list')).MediaList[0];
      expect(await t.op('play_hub_media_party_mode', { PersistentID: media.PersistentID })).toEqual({ Result: 'true' });
      expect((await t.op('playback_status')).PlaybackState).toBe('PlayerStatePlaying');
      expect(t.logs.join('')).toContain('front-end bug');
      expect(await t.op('stop_play')).toEqual({ Result: 'true' });
      await t.close();
      closed = true;
    } finally {
      if (!closed) await t.close();
    }
  });
});

describe('extension context', () => {
  let hub: SpeakerHub;
  let ext: RecordingExtension;
  let cleanup: () => Promise<void>;
  const clock = new ManualClock();

  beforeAll(async () => {
    ext = new RecordingExtension('probe');
    const made = await makeHub({ extensions: [ext], clock });
    hub = made.hub;
    cleanup = made.cleanup;
    await hub.start();
  });
  afterAll(async () => {
    await hub.stop();
    await cleanup();
  });

  test('dispatch runs operations with the same validation and errors as REST', async () => {
    const ctx = ext.ctx!;
    expect(ctx.uuid).toBe(hub.core.uuid);
    expect(ctx.httpServer?.listening).toBe(true);
    const bad = await ctx.dispatch('device_count', {});
    expect(bad).toMatchObject({ ok: false, error: { code: 'InvalidParameter' } });
    const unknown = await ctx.dispatch('no_such_op', {});
    expect(unknown).toMatchObject({ ok: false, error: { code: 'UnknownOperation' } });
  });

  test('a trusted session never expires, an ordinary one does', async () => {
    const ctx = ext.ctx!;
    const trusted = ctx.openTrustedSession();
    const ordinary = (await ctx.dispatch('init_session', {})) as unknown as { ok: true; body: { SessionToken: string } };
    clock.advance(hub.config.sessions.idleMinutes * 60_000 + 1);
    expect(await ctx.dispatch('device_count', { SessionToken: trusted })).toMatchObject({ ok: true, body: { DeviceCount: '3' } });
    expect(await ctx.dispatch('device_count', { SessionToken: ordinary.body.SessionToken })).toMatchObject({
      ok: false,
      error: { code: 'SessionNotFound' },
    });
    expect(await ctx.dispatch('close_session', { SessionToken: trusted })).toMatchObject({ ok: true });
    expect(await ctx.dispatch('device_count', { SessionToken: trusted })).toMatchObject({ ok: false, error: { code: 'SessionNotFound' } });
  });

  test('subscribers get the current state first, then events, never on the emitter stack', async () => {
    const ctx = ext.ctx!;
    const session = ctx.openTrustedSession();
    const got: WireEvent[] = [];
    let emitting = false;
    let deliveredDuringEmit = false;
    const sub = ctx.subscribe(
      (e) => {
        if (emitting) deliveredDuringEmit = true;
        got.push(e);
      },
      { initial: true },
    );
    const volumeSeen = new Promise<void>((resolve) => {
      const check = ctx.subscribe((e) => {
        if (e.type === 'volume' && e.data.volume === 33) {
          check.close();
          resolve();
        }
      });
    });
    const deviceId = hub.core.speakers.all()[0].id;
    emitting = true;
    const result = ctx.run(OPERATIONS_BY_NAME.get('set_volume_device')!, {
      SessionToken: session,
      DeviceID: deviceId,
      Volume: '33',
    });
    emitting = false;
    expect(await result).toMatchObject({ ok: true });
    await volumeSeen;
    expect(deliveredDuringEmit).toBe(false);
    expect(got[0]).toMatchObject({ type: 'playbackState', data: { state: 'PlayerStateStopped' } });
    expect(got).toContainEqual({ type: 'volume', data: { deviceId, volume: 33 } });
    sub.close();
  });

  test('a subscriber that falls behind is closed at its queue bound and told so', async () => {
    const ctx = ext.ctx!;
    const session = ctx.openTrustedSession();
    let overflowed = false;
    const overflow = new Promise<void>((resolve) => {
      // A handler is never called before the queue overflows: all events below are emitted in one turn.
      const sub = ctx.subscribe(() => undefined, {
        maxQueued: 5,
        onOverflow: () => {
          overflowed = sub.closed;
          resolve();
        },
      });
    });
    const deviceId = hub.core.speakers.all()[1].id;
    for (let v = 1; v <= 10; v++)
      ctx.run(OPERATIONS_BY_NAME.get('set_volume_device')!, { SessionToken: session, DeviceID: deviceId, Volume: String(v) });
    await overflow;
    expect(overflowed).toBe(true);
  });
});
