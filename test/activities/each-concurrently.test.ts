import { describe, expect, it } from 'vitest';
import { eachConcurrently, settleConcurrently } from '../../domain/concurrency';

const tick = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 1));

describe('eachConcurrently', () => {
  it('runs every item, starting them in order, never more than the limit at once', async () => {
    const started: number[] = [];
    let running = 0;
    let most = 0;
    await eachConcurrently([1, 2, 3, 4, 5, 6, 7], 3, async (n) => {
      started.push(n);
      most = Math.max(most, ++running);
      await tick();
      running -= 1;
    });
    expect(started).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(most).toBe(3);
  });

  it('starts nothing more once the signal is aborted, and finishes what is under way', async () => {
    const controller = new AbortController();
    const finished: number[] = [];
    await eachConcurrently(
      [1, 2, 3, 4, 5],
      2,
      async (n) => {
        if (n === 2) controller.abort();
        await tick();
        finished.push(n);
      },
      controller.signal,
    );
    expect(finished.sort()).toEqual([1, 2]);
  });

  it('takes an empty list and a limit below one', async () => {
    await eachConcurrently([], 4, async () => expect.unreachable());
    const seen: string[] = [];
    await eachConcurrently(['a', 'b'], 0, async (x) => void seen.push(x));
    expect(seen).toEqual(['a', 'b']);
  });
});

describe('settleConcurrently', () => {
  it('settles every item in order, failures included, never more than the limit at once', async () => {
    let running = 0;
    let most = 0;
    const settled = await settleConcurrently([1, 2, 3, 4, 5], 2, async (n) => {
      most = Math.max(most, ++running);
      await tick();
      running -= 1;
      if (n % 2 === 0) throw new Error(`even ${n}`);
      return n * 10;
    });
    expect(most).toBe(2);
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error).message))).toEqual([10, 'even 2', 30, 'even 4', 50]);
  });

  it('takes an empty list', async () => {
    expect(await settleConcurrently([], 3, async () => expect.unreachable())).toEqual([]);
  });
});
