/**
 * Whether a worker's workflow cache holds its pools. A pool the worker could not keep is replayed
 * from its whole history each time it wakes or is asked something. Since the periodic checks,
 * scrapes, dashboards and the status check read the pools' memos instead of asking them, that is
 * mostly a pool's own audit and its jobs (bench/many-pools.ts); a busy pool replayed for every
 * job is what it would cost. Said by the worker at start and by the status's `pools` check.
 */
export function workflowCacheAdvice(pools: number, runnersAtWork: number, kept: number): string | undefined {
  const wanted = pools + runnersAtWork;
  if (wanted <= kept) return undefined;
  const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;
  const enough = Math.ceil((wanted * 1.2) / 50) * 50;
  return `${plural(pools, 'pool')} and ${plural(runnersAtWork, 'runner')} at work, but a worker keeps at most ${kept} workflows in memory (temporal.workflowCacheSize): pools it cannot keep are replayed from their history whenever they wake (a job, a report from a runner, their own audit) or are asked a question; set temporal.workflowCacheSize to at least ${enough} (1 – 2 MB of worker memory each) and restart the workers, or spread the pools over more workers`;
}
