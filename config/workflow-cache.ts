/**
 * Whether a worker's workflow cache holds what it is asked about. Every liveness pass and sweep
 * asks each pool (scrapes, dashboards and the status check read the pools' glance instead), and
 * a pool the worker could not keep is replayed from its history for each question: busy while
 * nothing happens (bench/many-pools.ts). Said by the worker at start and by the status's `pools`
 * check.
 */
export function workflowCacheAdvice(pools: number, runnersAtWork: number, kept: number): string | undefined {
  const wanted = pools + runnersAtWork;
  if (wanted <= kept) return undefined;
  const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;
  const enough = Math.ceil((wanted * 1.2) / 50) * 50;
  return `${plural(pools, 'pool')} and ${plural(runnersAtWork, 'runner')} at work, but a worker keeps at most ${kept} workflows in memory (temporal.workflowCacheSize): pools it cannot keep are replayed from their history for every question asked of them (each liveness pass, sweep, metrics scrape and dashboard poll); set temporal.workflowCacheSize to at least ${enough} (1 – 2 MB of worker memory each) and restart the workers, or spread the pools over more workers`;
}
