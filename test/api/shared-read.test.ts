/** The summary's read of every pool, shared by requests that come at about the same time. */
import { describe, expect, it } from 'vitest';
import { SharedRead } from '../../api/shared-read';

function counted<T>(answers: (() => Promise<T>)[]) {
  let calls = 0;
  return {
    fetch: () => answers[calls++]!(),
    calls: () => calls,
  };
}

describe('a shared read', () => {
  it('is shared by the requests that come while it runs and within the fresh time after it, then read again', async () => {
    let clock = 0;
    const shared = new SharedRead<string>(1_000, () => clock);
    let finish!: (value: string) => void;
    const reads = counted([() => new Promise<string>((resolve) => (finish = resolve)), async () => 'second']);
    const first = shared.read(reads.fetch);
    const meanwhile = shared.read(reads.fetch);
    finish('first');
    expect(await Promise.all([first, meanwhile])).toEqual(['first', 'first']);
    clock += 999;
    expect(await shared.read(reads.fetch)).toBe('first');
    expect(reads.calls()).toBe(1);
    clock += 1;
    expect(await shared.read(reads.fetch)).toBe('second');
    expect(reads.calls()).toBe(2);
  });

  it('keeps no failed read: the next request reads again', async () => {
    const shared = new SharedRead<string>(60_000, () => 0);
    const reads = counted([async () => Promise.reject(new Error('Temporal did not answer')), async () => 'answer']);
    await expect(shared.read(reads.fetch)).rejects.toThrow('Temporal did not answer');
    expect(await shared.read(reads.fetch)).toBe('answer');
    expect(reads.calls()).toBe(2);
  });
});
