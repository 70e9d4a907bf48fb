/**
 * What a front end that follows a hub is told about the event stream (HubListener): resync
 * once events flow, lost when the hub cannot be reached. A listener that starts following a
 * stream already open resyncs too: it missed everything before it (a second Node-RED events
 * node, a front end started later); before, it heard nothing until the next reconnect. Runs
 * a RemoteConnection against a real hub on loopback.
 */
import { createLogger } from '../../src/logger';
import { RemoteConnection } from '../../src/hub-client/remote';
import { startHub, TEST_TOKEN, type TestHub } from '../helpers/hub';
import { eventually } from '../helpers/wait';

/** Resolves once `rec` has seen `what`. */
const seen = (rec: ReturnType<typeof recorder>, what: string, name: string) =>
  eventually(
    async () => (rec.seen.includes(what) ? true : undefined),
    10_000,
    () => `${name}: ${rec.seen}`,
  );

function recorder() {
  const seen: string[] = [];
  return { seen, listener: { event: () => undefined, resync: () => seen.push('resync'), lost: () => seen.push('lost') } };
}

describe('following a remote hub', () => {
  let t: TestHub;
  let conn: RemoteConnection;

  beforeAll(async () => {
    t = await startHub();
    conn = new RemoteConnection({ url: t.base, token: TEST_TOKEN, logger: createLogger({ level: 'silent' }), minBackoffMs: 50 });
  });
  afterAll(async () => {
    await conn.close();
    await t.close();
  });

  test('a listener added while the stream is open resyncs at once; every listener hears the loss', async () => {
    const first = recorder();
    const stopFirst = conn.follow(first.listener);
    await seen(first, 'resync', 'first');
    const second = recorder();
    const stopSecond = conn.follow(second.listener);
    await seen(second, 'resync', 'second');
    // One resync each: the second listener's did not reach the first again.
    expect(first.seen).toEqual(['resync']);
    const third = recorder();
    conn.follow(third.listener)();
    await t.close();
    await seen(first, 'lost', 'first');
    await seen(second, 'lost', 'second');
    // A listener gone before its resync was due gets nothing.
    expect(third.seen).toEqual([]);
    stopFirst();
    stopSecond();
  });
});
