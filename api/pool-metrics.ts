/**
 * What the pool gauges show, read from Temporal: the running pools from
 * visibility, then each pool's state query (and a scale-set pool's listener's).
 * Cached for a few seconds so Prometheus scraping every few seconds costs one
 * round per interval.
 */
import { Client } from '@temporalio/client';
import { addPoolSnapshotSource, type PoolSnapshot } from '../observability/pool-gauges';
import { poolStateQuery, queuedJobCount } from '../workflows/pool-messages';
import { scaleSetDifferences } from '../domain/scale-set';
import { scaleSetListenerId, scaleSetStateQuery } from '../workflows/scale-set-messages';
import { PoolDirectory } from './pool-directory';

export interface PoolMetricsOptions {
  cacheMs: number;
  /** Only this installation's pools: another's sharing the namespace are its own to count. */
  taskQueue?: string;
  queryTimeoutMs: number;
  /** Told of each pool whose state could not be read. */
  onPoolReadFailed?: (pool: string, err: unknown) => void;
}

export async function readPoolSnapshots(
  client: Client,
  directory: PoolDirectory,
  queryTimeoutMs: number,
  onPoolReadFailed?: PoolMetricsOptions['onPoolReadFailed'],
): Promise<PoolSnapshot[]> {
  const pools = await directory.fetch();
  const query = <T>(workflowId: string, ask: (id: string) => Promise<T>): Promise<T> => client.withDeadline(Date.now() + queryTimeoutMs, () => ask(workflowId));
  const views = await Promise.all(
    pools.map(async (pool) => {
      const view = await query(pool.workflowId, (id) => client.workflow.getHandle(id).query(poolStateQuery)).catch((err: unknown) => {
        onPoolReadFailed?.(pool.name, err);
        return undefined;
      });
      // A pool that ended between the list and the query has nothing to count.
      if (!view) return undefined;
      if (view.settings.mode !== 'scaleSet') return { pool, view };
      // A scale-set pool takes jobs only through a listener that holds a session: one stuck in
      // `conflict` (another listener holds the scale set) or gone leaves idle runners and waiting jobs.
      const listener = await query(scaleSetListenerId(pool.name), (id) => client.workflow.getHandle(id).query(scaleSetStateQuery)).catch(() => undefined);
      return { pool, view, scaleSetListener: listener?.status ?? 'absent', scaleSetDiffers: listener ? scaleSetDifferences(listener) : [] };
    }),
  );
  return views
    .filter((v) => v !== undefined)
    .map(({ pool, view, scaleSetListener, scaleSetDiffers }) => ({
      pool: pool.name,
      provider: view.settings.provider,
      runnerStatuses: view.runners.map((r) => r.status),
      agentStatuses: view.runners.map((r) => r.runnerStatus),
      queuedJobs: queuedJobCount(view),
      ...(scaleSetListener !== undefined ? { scaleSetListener } : {}),
      ...(scaleSetDiffers && scaleSetDiffers.length > 0 ? { scaleSetDiffers } : {}),
    }));
}

/** Registers this client's pools with the gauges; returns the function that unregisters them. */
export function exposePoolMetrics(client: Client, options: PoolMetricsOptions): () => void {
  const directory = new PoolDirectory(client, options.cacheMs, options.taskQueue);
  // Queries only open workflows. A closed one would still answer, from its last state, replayed on a
  // worker for each scrape: a terminated listener would read as still `listening`.
  const openOnly = new Client({ connection: client.connection, namespace: client.options.namespace, workflow: { queryRejectCondition: 'NOT_OPEN' } });
  let cached: { at: number; snapshots: Promise<PoolSnapshot[]> } | undefined;
  return addPoolSnapshotSource(() => {
    const now = Date.now();
    if (!cached || now - cached.at > options.cacheMs) {
      const snapshots = readPoolSnapshots(openOnly, directory, options.queryTimeoutMs, options.onPoolReadFailed);
      cached = { at: now, snapshots };
      snapshots.catch(() => (cached = undefined));
    }
    return cached.snapshots;
  });
}
