/**
 * Loading a URI (RendererControl.setUri) against renderers on loopback. A renderer known to be
 * idle gets SetAVTransportURI alone (issue 30: one round trip less before an announcement's
 * first sound); one that plays, or whose state is not known, is stopped first (gmediarender
 * sometimes stalls when it takes a new URI while it plays: upnp.lab.test.ts shows the hub's
 * replacing play on the real renderer); one that refuses a new URI without a Stop (UPnP 701)
 * is stopped and asked again, and stopped first on every later load.
 */
import { IDLE_TRUST_MS, type RendererControl } from '../../../src/drivers/upnp/renderer-control';
import { ManualClock } from '../../../src/core/clock';
import { UpnpError } from '../../../src/protocols/upnp/soap';
import { avtEndpoint } from './avt-endpoint';

const LOADS = ['Stop', 'SetAVTransportURI'];

interface FakeRenderer {
  /** The actions it was sent, reads (Get…) left out. */
  actions: string[];
  control: RendererControl;
  /** What GetTransportInfo answers. */
  state: string;
  /** GetTransportInfo answers once this resolves (a read still on its way). */
  holdReads?: Promise<void>;
  close: () => Promise<void>;
}

/** An AVTransport control endpoint that logs the actions; `locked`: SetAVTransportURI only right after a Stop. */
async function renderer(locked = false, clock?: ManualClock): Promise<FakeRenderer> {
  const fake = { actions: [] as string[], state: 'STOPPED' } as FakeRenderer;
  const endpoint = await avtEndpoint(async (action) => {
    if (action === 'GetTransportInfo') {
      const state = fake.state;
      await fake.holdReads;
      return { fields: { CurrentTransportState: state, CurrentTransportStatus: 'OK', CurrentSpeed: '1' } };
    }
    const refuse = locked && action === 'SetAVTransportURI' && fake.actions[fake.actions.length - 1] !== 'Stop';
    fake.actions.push(action);
    return refuse ? { fault: new UpnpError('TransitionNotAvailable') } : {};
  }, clock);
  return Object.assign(fake, endpoint);
}

async function withRenderer(locked: boolean, fn: (r: FakeRenderer) => Promise<void>, clock?: ManualClock): Promise<void> {
  const r = await renderer(locked, clock);
  try {
    await fn(r);
  } finally {
    await r.close();
  }
}

const load = (r: FakeRenderer, name = 'a'): Promise<void> => r.control.setUri(`http://h/${name}.mp3`, '', () => undefined);

test('a renderer whose state is not known yet is stopped first', () =>
  withRenderer(false, async (r) => {
    await load(r);
    expect(r.actions).toEqual(LOADS);
  }));

test('a renderer read as idle, or stopped by the hub, gets SetAVTransportURI alone', () =>
  withRenderer(false, async (r) => {
    await r.control.readTransport();
    await load(r, 'a');
    expect(r.actions).toEqual(['SetAVTransportURI']);
    r.state = 'NO_MEDIA_PRESENT';
    await r.control.readTransport();
    await load(r, 'b');
    await r.control.avt('Stop');
    await load(r, 'c');
    expect(r.actions).toEqual(['SetAVTransportURI', 'SetAVTransportURI', 'Stop', 'SetAVTransportURI']);
  }));

test('a renderer that plays (Play sent, read as playing or paused, an event says so) is stopped first', () =>
  withRenderer(false, async (r) => {
    await r.control.readTransport();
    await r.control.avt('Play', { Speed: '1' });
    await load(r, 'a');
    expect(r.actions).toEqual(['Play', ...LOADS]);
    for (const state of ['PLAYING', 'PAUSED_PLAYBACK', 'TRANSITIONING']) {
      r.state = state;
      await r.control.readTransport();
      r.actions.length = 0;
      await load(r, state);
      expect({ state, actions: r.actions }).toEqual({ state, actions: LOADS });
    }
    r.state = 'STOPPED';
    await r.control.readTransport();
    r.control.noteEvent({ TransportState: 'PLAYING' });
    r.actions.length = 0;
    await load(r, 'after-event');
    expect(r.actions).toEqual(LOADS);
    // A STOPPED event is not trusted (events can be stale): only a read or the hub's own Stop.
    r.control.noteEvent({ TransportState: 'STOPPED' });
    await r.control.avt('Play', { Speed: '1' });
    r.control.noteEvent({ TransportState: 'STOPPED' });
    r.actions.length = 0;
    await load(r, 'stale-event');
    expect(r.actions).toEqual(LOADS);
  }));

test('idle is known for IDLE_TRUST_MS only: another app may have started the renderer since, without an event', () => {
  const clock = new ManualClock();
  return withRenderer(
    false,
    async (r) => {
      await r.control.readTransport();
      clock.advance(IDLE_TRUST_MS);
      await load(r, 'a');
      expect(r.actions).toEqual(['SetAVTransportURI']);
      await r.control.readTransport();
      clock.advance(IDLE_TRUST_MS + 1);
      await load(r, 'b');
      await r.control.avt('Stop');
      clock.advance(IDLE_TRUST_MS + 1);
      await load(r, 'c');
      expect(r.actions).toEqual(['SetAVTransportURI', ...LOADS, 'Stop', ...LOADS]);
    },
    clock,
  );
});

test('a read answered STOPPED after a Play went out says nothing: the next load stops first', () =>
  withRenderer(false, async (r) => {
    let answer!: () => void;
    r.holdReads = new Promise((res) => (answer = res));
    const read = r.control.readTransport();
    // The read is at the renderer, answering STOPPED later; meanwhile the hub's Play goes out.
    await new Promise((res) => setTimeout(res, 50));
    await r.control.avt('Play', { Speed: '1' });
    answer();
    expect((await read).state).toBe('STOPPED');
    await load(r);
    expect(r.actions).toEqual(['Play', ...LOADS]);
  }));

test('a renderer that refuses a new URI without a Stop: Stop, then again; and Stop first from then on', () =>
  withRenderer(true, async (r) => {
    const checks: string[] = [];
    await r.control.readTransport();
    await r.control.setUri('http://h/a.mp3', '', () => checks.push('still wanted'));
    expect(r.actions).toEqual(['SetAVTransportURI', ...LOADS]);
    // The play may have been replaced while the renderer stopped: the caller is asked before the retry.
    expect(checks).toEqual(['still wanted']);
    await r.control.readTransport();
    await load(r, 'b');
    expect(r.actions.slice(3)).toEqual(LOADS);
  }));
