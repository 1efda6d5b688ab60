import { describe, expect, it } from 'vitest';
import { CreateAttempts } from '../../activities/create-attempts';

const later = () => {
  let resolve: () => void = () => undefined;
  const done = new Promise<void>((r) => (resolve = r));
  return { done, resolve };
};

describe('CreateAttempts', () => {
  it('starts an attempt for a name only once the one before it has settled, and hands on what it registered', async () => {
    const attempts = new CreateAttempts();
    const order: string[] = [];
    const firstMayEnd = later();
    const first = attempts.run('fake/r1', async (attempt) => {
      order.push('first started');
      attempt.githubRunnerId = 7;
      await firstMayEnd.done;
      order.push('first ended');
    });
    const second = attempts.run('fake/r1', async (_attempt, before) => {
      order.push(`second started, before registered ${before?.githubRunnerId}`);
    });
    const other = attempts.run('fake/r2', async () => {
      order.push('other name started');
    });
    await other;
    expect(order).toEqual(['first started', 'other name started']);
    firstMayEnd.resolve();
    await Promise.all([first, second]);
    expect(order).toEqual(['first started', 'other name started', 'first ended', 'second started, before registered 7']);
    expect(attempts.size).toBe(0);
  });

  it('a failed attempt releases the next one, and a chain of three runs in order', async () => {
    const attempts = new CreateAttempts();
    const order: number[] = [];
    const failed = attempts.run('p/r', async () => {
      order.push(1);
      throw new Error('provider refused');
    });
    const second = attempts.run('p/r', async () => {
      order.push(2);
    });
    const third = attempts.run('p/r', async () => {
      order.push(3);
    });
    await expect(failed).rejects.toThrow('provider refused');
    await Promise.all([second, third]);
    expect(order).toEqual([1, 2, 3]);
    expect(attempts.size).toBe(0);
  });

  it('hands a settled attempt that failed, or whose caller gave up, to the attempt that starts after it', async () => {
    const attempts = new CreateAttempts();
    await expect(
      attempts.run('p/failed', async (attempt) => {
        attempt.githubRunnerId = 11;
        throw new Error('provider refused');
      }),
    ).rejects.toThrow('provider refused');
    let gaveUp = false;
    await attempts.run(
      'p/cut-off',
      async (attempt) => {
        attempt.githubRunnerId = 12;
        gaveUp = true;
      },
      () => gaveUp,
    );
    const seen: (number | undefined)[] = [];
    await attempts.run('p/failed', async (_attempt, before) => void seen.push(before?.githubRunnerId));
    await attempts.run('p/cut-off', async (_attempt, before) => void seen.push(before?.githubRunnerId));
    // Taken once: the attempts above finished for their callers, so nothing is left for a third.
    await attempts.run('p/failed', async (_attempt, before) => void seen.push(before?.githubRunnerId));
    expect(seen).toEqual([11, 12, undefined]);
  });

  it('keeps nothing from an attempt that finished for its caller, or that registered nothing', async () => {
    const attempts = new CreateAttempts();
    await attempts.run('p/done', async (attempt) => {
      attempt.githubRunnerId = 21;
    });
    await expect(
      attempts.run('p/nothing', async () => {
        throw new Error('GitHub refused');
      }),
    ).rejects.toThrow('GitHub refused');
    const seen: (number | undefined)[] = [];
    await attempts.run('p/done', async (_attempt, before) => void seen.push(before?.githubRunnerId));
    await attempts.run('p/nothing', async (_attempt, before) => void seen.push(before?.githubRunnerId));
    expect(seen).toEqual([undefined, undefined]);
  });
});
