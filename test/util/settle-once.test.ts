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

function startWith<T>(deadline: Parameters<typeof settleOnce<T>>[2], onError?: () => void) {
  let settle!: ReturnType<typeof settleOnce<T>>;
  const done = new Promise<T>((resolve, reject) => {
    settle = settleOnce<T>(resolve, reject, deadline, onError);
  });
  return { settle, done };
}

test('a value settles once: the first value wins over later values, errors and the deadline', async () => {
  jest.useFakeTimers();
  try {
    const errors: number[] = [];
    const s = startWith<number>({ ms: 20, message: () => 'late' }, () => errors.push(1));
    expect(jest.getTimerCount()).toBe(1);
    s.settle.resolve(1);
    // The deadline's timer is gone with the first outcome, not left to fire into nothing.
    expect(jest.getTimerCount()).toBe(0);
    s.settle.resolve(2);
    s.settle(new Error('after'));
    await expect(s.done).resolves.toBe(1);
    expect(errors).toEqual([]);
  } finally {
    jest.useRealTimers();
  }
});

test('a deadline can reject with an error of its own (its class and code kept), or resolve with a value', async () => {
  class CodedError extends Error {
    constructor(readonly code: string) {
      super(`coded ${code}`);
    }
  }
  const coded = startWith<string>({ ms: 5, error: () => new CodedError('ETIMEDOUT') });
  await expect(coded.done).rejects.toMatchObject({ code: 'ETIMEDOUT', message: 'coded ETIMEDOUT' });
  expect(await startWith<boolean>({ ms: 5, value: () => false }).done).toBe(false);
});

test('restart replaces the deadline from now; after settling it does nothing', async () => {
  const s = startWith<string>({ ms: 30, value: () => 'first deadline' });
  s.settle.restart({ ms: 5, value: () => 'second deadline' });
  expect(await s.done).toBe('second deadline');

  const long = startWith<string>({ ms: 5, value: () => 'short' });
  long.settle.restart({ ms: 60_000, value: () => 'long' });
  long.settle.resolve('answered');
  expect(await long.done).toBe('answered');

  jest.useFakeTimers();
  try {
    const late = startWith<string>({ ms: 1_000, value: () => 'deadline' });
    late.settle.resolve('now');
    late.settle.restart({ ms: 1, value: () => 'restarted' });
    expect(jest.getTimerCount()).toBe(0);
    expect(await late.done).toBe('now');
  } finally {
    jest.useRealTimers();
  }
});
