/**
 * Which pools count given jobs as queued, or have a runner on them: the sweep asks before it
 * routes a job again (a pool merely full must not be given a second runner for it), and the
 * API's job lookup asks where a job is. A pool's state view lists only its oldest queued jobs,
 * so each pool is asked about these ones (`knownJobs`).
 */
import { QueryNotRegisteredError, type Client } from '@temporalio/client';
import { knownJobsQuery, poolStateQuery } from '../../workflows/pool-messages';
import type { PoolEntry } from '../pool-directory';

/** Pools asked at once: side by side, each bounded, so one whose worker is gone holds up no other. */
const QUERIES_AT_ONCE = 16;

/** For each job some pool knows, the workflow ids of the pools that know it. A pool that does not answer claims nothing. */
export async function poolsKnowingJobs(client: Client, pools: readonly PoolEntry[], jobIds: readonly number[], queryTimeoutMs: number): Promise<Map<number, string[]>> {
  const known = new Map<number, string[]>();
  const bounded = <R>(fn: () => Promise<R>): Promise<R> => client.withDeadline(Date.now() + queryTimeoutMs, fn);
  for (let i = 0; i < pools.length; i += QUERIES_AT_ONCE) {
    await Promise.all(
      pools.slice(i, i + QUERIES_AT_ONCE).map(async (entry) => {
        const handle = client.workflow.getHandle(entry.workflowId);
        try {
          const ids = await bounded(() => handle.query(knownJobsQuery, { jobIds: [...jobIds] })).catch(async (err: unknown) => {
            // A pool run by an older worker has no such query; its view lists every queued job.
            if (!(err instanceof QueryNotRegisteredError)) throw err;
            const view = await bounded(() => handle.query(poolStateQuery));
            const held = new Set([...view.queuedJobs.map((j) => j.jobId), ...view.runners.flatMap((r) => (r.jobId !== undefined ? [r.jobId] : []))]);
            return jobIds.filter((id) => held.has(id));
          });
          for (const id of ids) known.set(id, [...(known.get(id) ?? []), entry.workflowId]);
        } catch {
          // A pool that does not answer cannot claim the job; routing asks the pools again anyway.
        }
      }),
    );
  }
  return known;
}
