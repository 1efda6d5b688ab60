/**
 * What the pool gauges show, read from Temporal: the running pools from
 * visibility, then each pool's state query. Cached for a few seconds so
 * Prometheus scraping every few seconds costs one round per interval.
 */
import type { Client } from '@temporalio/client';
import { addPoolSnapshotSource, type PoolSnapshot } from '../observability/pool-gauges';
import { poolStateQuery, queuedJobCount } from '../workflows/pool-messages';
import { PoolDirectory } from './pool-directory';

export interface PoolMetricsOptions {
  cacheMs: number;
  /** Only this installation's pools: another's sharing the namespace are its own to count. */
  taskQueue?: string;
  queryTimeoutMs: number;
}

export async function readPoolSnapshots(client: Client, directory: PoolDirectory, queryTimeoutMs: number): Promise<PoolSnapshot[]> {
  const pools = await directory.fetch();
  const views = await Promise.all(
    pools.map((pool) =>
      client
        .withDeadline(Date.now() + queryTimeoutMs, () => client.workflow.getHandle(pool.workflowId).query(poolStateQuery))
        // A pool that ended between the list and the query has nothing to count.
        .then((view) => ({ pool, view }), () => undefined),
    ),
  );
  return views
    .filter((v) => v !== undefined)
    .map(({ pool, view }) => ({
      pool: pool.name,
      provider: view.settings.provider,
      runnerStatuses: view.runners.map((r) => r.status),
      agentStatuses: view.runners.map((r) => r.runnerStatus),
      queuedJobs: queuedJobCount(view),
    }));
}

/** Registers this client's pools with the gauges; returns the function that unregisters them. */
export function exposePoolMetrics(client: Client, options: PoolMetricsOptions): () => void {
  const directory = new PoolDirectory(client, options.cacheMs, options.taskQueue);
  let cached: { at: number; snapshots: Promise<PoolSnapshot[]> } | undefined;
  return addPoolSnapshotSource(() => {
    const now = Date.now();
    if (!cached || now - cached.at > options.cacheMs) {
      const snapshots = readPoolSnapshots(client, directory, options.queryTimeoutMs);
      cached = { at: now, snapshots };
      snapshots.catch(() => (cached = undefined));
    }
    return cached.snapshots;
  });
}
