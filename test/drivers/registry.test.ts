/**
 * The driver registry: config parts, which drivers run, flags from definitions, and lazy
 * loading (a hub without a driver never loads its implementation).
 */
import { ConfigError, parseConfig } from '../../src/hub-config';
import { systemClock } from '../../src/core/clock';
import { createDrivers, DRIVER_NAMES, DRIVERS } from '../../src/drivers/registry';
import { createLogger } from '../../src/logger';
import { startHub, type TestHub } from '../helpers/hub';

describe('which drivers run', () => {
  test('nothing configured: the virtual speakers', () => {
    expect(parseConfig({}).drivers).toEqual(['virtual']);
  });

  test('a part that names speakers turns its driver on, without the demo speakers', () => {
    expect(parseConfig({ snapcast: { servers: ['127.0.0.1:1705'] } }).drivers).toEqual(['snapcast']);
    expect(parseConfig({ upnp: { renderers: ['http://127.0.0.1:1/d.xml'] } }).drivers).toEqual(['upnp']);
  });

  test('named drivers and implied ones together, each once, named ones first', () => {
    expect(parseConfig({ drivers: ['virtual', 'snapcast'], snapcast: { servers: ['h'] } }).drivers).toEqual(['virtual', 'snapcast']);
    expect(parseConfig({ drivers: ['virtual'], snapcast: { servers: ['h'] } }).drivers).toEqual(['virtual', 'snapcast']);
  });

  test('an unknown driver is a config error that lists the known ones', () => {
    let err: unknown;
    try {
      parseConfig({ drivers: ['virtual', 'sonos'] });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems).toEqual([`drivers.1: unknown driver 'sonos'; known drivers: ${DRIVER_NAMES.join(', ')}`]);
  });

  test("each driver's part is validated under its own key", () => {
    expect(() => parseConfig({ speakers: { virtual: { count: 1, names: ['a', 'b'] } } })).toThrow(/speakers\.virtual\.names: 2 names for 1/);
    expect(() => parseConfig({ upnp: { renderers: ['ftp://x/d.xml'] } })).toThrow(/upnp\.renderers\.0/);
    expect(() => parseConfig({ snapcast: { nope: 1 } })).toThrow(/snapcast\.nope: unknown key/);
  });

  test('every registered driver has a unique name and config key, and a part that defaults', () => {
    expect(new Set(DRIVERS.map((d) => d.name)).size).toBe(DRIVERS.length);
    expect(new Set(DRIVERS.map((d) => d.configKey)).size).toBe(DRIVERS.length);
    const config = parseConfig({}) as unknown as Record<string, unknown>;
    for (const d of DRIVERS) expect(config[d.configKey]).toBeDefined();
  });
});

describe('lazy loading', () => {
  let t: TestHub;
  afterAll(() => t?.close());

  test('a hub with virtual speakers only never loads the UPnP or Snapcast code', async () => {
    t = await startHub({ speakers: { virtual: { count: 2 } } });
    expect(t.hub.drivers.map((d) => d.name)).toEqual(['virtual']);
    expect(t.hub.driver('virtual')!.speakers()).toHaveLength(2);
    const loaded = Object.keys(require.cache);
    expect(loaded.some((f) => /src[/\\]drivers[/\\]virtual[/\\]virtual-driver/.test(f))).toBe(true);
    expect(loaded.some((f) => /src[/\\]drivers[/\\](snapcast|upnp)[/\\]driver/.test(f))).toBe(false);
  });
});

describe('the hub-level ffmpeg binary (media.ffmpegPath)', () => {
  const deps = (config: ReturnType<typeof parseConfig>) => ({
    clock: systemClock,
    logger: createLogger({ level: 'silent' }),
    version: 'test',
    isHubMediaUrl: () => false,
    hub: config,
  });
  /** The ffmpegPath each created driver will run. */
  async function pathsOf(raw: Record<string, unknown>): Promise<Record<string, string | undefined>> {
    const config = parseConfig({ ...raw, snapcast: { servers: ['127.0.0.1:1705'], ...(raw.snapcast as object) } });
    const drivers = await createDrivers(['snapcast', 'squeezebox', 'airplay'], config as unknown as Record<string, unknown>, deps(config));
    const opts = (d: unknown) => (d as { opts: { ffmpegPath?: string; config: { ffmpegPath?: string } } }).opts;
    // Constructed, not started: nothing connects.
    const snapServer = (drivers[0] as unknown as { servers: unknown[] }).servers[0];
    return {
      snapcast: opts(snapServer).config.ffmpegPath,
      squeezebox: opts(drivers[1]).ffmpegPath,
      airplay: opts(drivers[2]).ffmpegPath,
    };
  }

  test('reaches every driver that runs ffmpeg; snapcast.ffmpegPath overrides it for Snapcast', async () => {
    expect(await pathsOf({ media: { ffmpegPath: '/opt/ffmpeg/bin/ffmpeg' } })).toEqual({
      snapcast: '/opt/ffmpeg/bin/ffmpeg',
      squeezebox: '/opt/ffmpeg/bin/ffmpeg',
      airplay: '/opt/ffmpeg/bin/ffmpeg',
    });
    expect(await pathsOf({ media: { ffmpegPath: '/opt/ffmpeg/bin/ffmpeg' }, snapcast: { ffmpegPath: '/usr/local/bin/ffmpeg' } })).toMatchObject({
      snapcast: '/usr/local/bin/ffmpeg',
      squeezebox: '/opt/ffmpeg/bin/ffmpeg',
    });
    expect((await pathsOf({})).snapcast).toBe('ffmpeg');
  });
});
