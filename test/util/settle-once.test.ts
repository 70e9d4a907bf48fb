/** settleOnce: the first outcome wins, the deadline fires once and only when nothing came first. */
import { settleOnce } from '../../src/util/settle-once';

function start(ms: number, onError?: () => void) {
  let settle!: ReturnType<typeof settleOnce>;
  const done = new Promise<void>((resolve, reject) => {
    settle = settleOnce(resolve, reject, { ms, message: () => `nothing within ${ms} ms` }, onError);
  });
  return { settle, done };
}

test('a success before the deadline resolves, and the later deadline does nothing', async () => {
  const errors: number[] = [];
  const s = start(20, () => errors.push(1));
  s.settle();
  s.settle(new Error('late'));
  await expect(s.done).resolves.toBeUndefined();
  expect(s.settle.settled).toBe(true);
  await new Promise((r) => setTimeout(r, 40));
  expect(errors).toEqual([]);
});

test('the deadline rejects with its message once, calling onError once', async () => {
  const errors: number[] = [];
  const s = start(10, () => errors.push(1));
  expect(s.settle.settled).toBe(false);
  await expect(s.done).rejects.toThrow('nothing within 10 ms');
  s.settle();
  s.settle(new Error('again'));
  expect(errors).toEqual([1]);
});

test('the first error wins over a later success', async () => {
  const s = start(1_000);
  s.settle(new Error('first'));
  s.settle();
  await expect(s.done).rejects.toThrow('first');
});
