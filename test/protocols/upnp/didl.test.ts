/** UPnP times and DIDL-Lite reading (src/protocols/upnp/didl.ts), one for the driver and the renderers. */
import { formatTime, parseTime, readDidl } from '../../../src/protocols/upnp/didl';

describe('times', () => {
  test('REL_TIME formatting and parsing', () => {
    expect(formatTime(0)).toBe('0:00:00');
    expect(formatTime(3725.9)).toBe('1:02:05');
    expect(parseTime('0:00:07')).toBe(7);
    expect(parseTime('01:02:05.500')).toBe(3725.5);
    expect(parseTime('NOT_IMPLEMENTED')).toBeUndefined();
    expect(parseTime('')).toBeUndefined();
    expect(parseTime(undefined)).toBeUndefined();
    expect(parseTime(' +0:01:02.5/2 ')).toBe(62.5);
    // Minutes and seconds past 59 are no time (a renderer's garbage is not taken as a position).
    expect(parseTime('0:61:00')).toBeUndefined();
    expect(formatTime(undefined)).toBe('0:00:00');
    expect(formatTime(Number.NaN)).toBe('0:00:00');
    expect(formatTime(-5)).toBe('0:00:00');
  });
});

describe('reading DIDL-Lite', () => {
  test("the first item's title and protocolInfo; {} for none, NOT_IMPLEMENTED and hostile XML", () => {
    const didl =
      '<DIDL-Lite xmlns:dc="http://purl.org/dc/elements/1.1/"><item><dc:title>A &amp; B</dc:title><res protocolInfo="http-get:*:audio/mpeg:*">http://h/a</res></item></DIDL-Lite>';
    expect(readDidl(didl)).toEqual({ title: 'A & B', protocolInfo: 'http-get:*:audio/mpeg:*' });
    expect(readDidl('')).toEqual({});
    expect(readDidl('NOT_IMPLEMENTED')).toEqual({});
    expect(readDidl('<!DOCTYPE d [<!ENTITY t "x">]><DIDL-Lite><item><title>&t;</title></item></DIDL-Lite>')).toEqual({});
  });
});
