/**
 * src/util/turns.ts: work a LAN peer causes runs one job per event-loop turn, so other I/O
 * (REST answers) interleaves with it; a full queue refuses at once.
 */
import { Turns } from '../../src/util/turns';

test('turns are handed out one per event-loop iteration, interleaved with other work', async () => {
  const turns = new Turns(16);
  const order: string[] = [];
  // Another piece of work that needs one step per iteration (as I/O callbacks do).
  let ticks = 0;
  const tick = () => {
    order.push('tick');
    if (++ticks < 12) setImmediate(tick);
  };
  setImmediate(tick);
  const jobs = ['a', 'b', 'c', 'd'].map((name) => turns.take().then((ok) => order.push(`${name}:${ok}`)));
  await Promise.all(jobs);
  const turnsAt = order.flatMap((e, i) => (e === 'tick' ? [] : [i]));
  expect(order.filter((e) => e !== 'tick')).toEqual(['a:true', 'b:true', 'c:true', 'd:true']);
  // No two turns back to back: the other work ran between every two of them.
  for (let i = 1; i < turnsAt.length; i++) expect(turnsAt[i] - turnsAt[i - 1]).toBeGreaterThan(1);
});

test('a full queue answers false at once, and frees up as turns are taken', async () => {
  const turns = new Turns(2);
  const first = turns.take();
  const second = turns.take();
  expect(turns.pending).toBe(2);
  expect(await turns.take()).toBe(false);
  expect(await first).toBe(true);
  expect(await second).toBe(true);
  expect(turns.pending).toBe(0);
  expect(await turns.take()).toBe(true);
});
