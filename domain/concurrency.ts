/**
 * Runs `work` over `items`, at most `limit` at a time, starting them in order. Used where
 * a pass calls out once per pool, runner or listing: a few calls side by side keep it
 * quick without flooding a provider, GitHub or the Temporal frontend. Once `signal` is
 * aborted no further item starts; those under way finish.
 */
export async function eachConcurrently<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>, signal?: AbortSignal): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length && !signal?.aborted) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), Math.max(1, items.length)) }, lane));
}

/** Resolves with the promise's value, or undefined once `ms` passed (the promise is left to settle on its own). */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** `Promise.allSettled` over `items`, at most `limit` of them under way at once; results in the items' order. */
export async function settleConcurrently<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<PromiseSettledResult<R>[]> {
  const settled: PromiseSettledResult<R>[] = new Array<PromiseSettledResult<R>>(items.length);
  const indexed = items.map((item, index) => ({ item, index }));
  await eachConcurrently(indexed, limit, async ({ item, index }) => {
    try {
      settled[index] = { status: 'fulfilled', value: await work(item) };
    } catch (reason) {
      settled[index] = { status: 'rejected', reason };
    }
  });
  return settled;
}
