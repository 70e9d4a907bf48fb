import { mpdDriver } from '../../../src/drivers/mpd/definition';
import { MpdConfigSchema, resolveMpdServers } from '../../../src/drivers/mpd/config';
import { parseConfig } from '../../../src/hub-config';

describe('MPD driver configuration', () => {
  test('servers given turn the driver on (as --snapcast does); none leaves the default drivers', () => {
    const on = parseConfig({ mpd: { servers: ['192.168.1.20'] } });
    expect(on.drivers).toContain('mpd');
    expect(parseConfig({}).drivers).not.toContain('mpd');
  });

  test('--mpd is repeatable and maps onto mpd.servers, labelled with the flag', () => {
    expect(mpdDriver.flags!.toConfig({ mpd: ['a:6601', 'b'] })).toEqual({ part: { servers: ['a:6601', 'b'] }, labels: { servers: '--mpd' } });
    expect(mpdDriver.flags!.toConfig({})).toEqual({ part: {}, labels: {} });
  });

  test('strings and objects resolve to host, port (6600 by default) and a name (else MPD <host>)', () => {
    const servers = resolveMpdServers(
      MpdConfigSchema.parse({ servers: ['10.0.0.5', '10.0.0.6:6601', { host: '10.0.0.7', name: 'Kitchen', password: 'pw' }] }),
    );
    expect(servers).toEqual([
      { host: '10.0.0.5', port: 6600, password: undefined, name: 'MPD 10.0.0.5', address: '10.0.0.5:6600' },
      { host: '10.0.0.6', port: 6601, password: undefined, name: 'MPD 10.0.0.6', address: '10.0.0.6:6601' },
      { host: '10.0.0.7', port: 6600, password: 'pw', name: 'Kitchen', address: '10.0.0.7:6600' },
    ]);
  });

  test('bad input is a config error, not a crash at run time', () => {
    expect(() => parseConfig({ mpd: { servers: [{ host: 'x', port: 70000 }] } })).toThrow();
    expect(() => parseConfig({ mpd: { servers: [{ host: 'x', bogus: 1 }] } })).toThrow();
    expect(() => resolveMpdServers(MpdConfigSchema.parse({ servers: ['x:99999'] }))).toThrow(/bad port/);
  });
});
