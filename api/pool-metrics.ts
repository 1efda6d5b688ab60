/**
 * What the pool gauges show, read from Temporal: the running pools from
 * visibility, then each pool's state query (and a scale-set pool's listener's).
 * Cached for a few seconds so Prometheus scraping every few seconds costs one
 * round per interval.
 */
import { Client } from '@temporalio/client';
import { addPoolSnapshotSource, type PoolSnapshot } from '../observability/pool-gauges';
import { poolStateQuery, queuedJobCount } from '../workflows/pool-messages';
import { countStatuses } from '../domain/pool-counts';
import { scaleSetDifferences } from '../domain/scale-set';
import { scaleSetListenerId, scaleSetStateQuery } from '../workflows/scale-set-messages';
import { PoolDirectory, type PoolEntry } from './pool-directory';

export interface PoolMetricsOptions {
  cacheMs: number;
  /** Only this installation's pools: another's sharing the namespace are its own to count. */
  taskQueue?: string;
  queryTimeoutMs: number;
  /** Told of each pool whose state could not be read. */
  onPoolReadFailed?: (pool: string, err: unknown) => void;
}

export interface PoolSnapshotReading {
  queryTimeoutMs: number;
  /** Told of each pool whose state could not be read. */
  onPoolReadFailed?: PoolMetricsOptions['onPoolReadFailed'];
  /**
   * Take a pool's counts from the glance in its memo (for every pool, or those the function
   * picks), and ask only the others. A pool whose workflow tasks fail still lists its last glance:
   * the gauges do not mind, the status check asks those the server reports failing.
   */
  fromGlance?: boolean | ((pool: PoolEntry) => boolean);
}

export async function readPoolSnapshots(client: Client, directory: PoolDirectory, reading: PoolSnapshotReading): Promise<PoolSnapshot[]> {
  const pools = await directory.fetch();
  const query = <T>(workflowId: string, ask: (id: string) => Promise<T>): Promise<T> => client.withDeadline(Date.now() + reading.queryTimeoutMs, () => ask(workflowId));
  const snapshots = await Promise.all(
    pools.map(async (pool): Promise<PoolSnapshot | undefined> => {
      const glanced = typeof reading.fromGlance === 'function' ? reading.fromGlance(pool) : reading.fromGlance === true;
      const glance = glanced ? pool.memo?.glance : undefined;
      let snapshot: PoolSnapshot;
      let mode: string | undefined;
      if (glance && pool.memo) {
        mode = pool.memo.mode;
        snapshot = { pool: pool.name, provider: pool.memo.provider, runnersByStatus: glance.statuses, runnersByAgent: glance.agents, queuedJobs: glance.queuedJobs };
      } else {
        const view = await query(pool.workflowId, (id) => client.workflow.getHandle(id).query(poolStateQuery)).catch((err: unknown) => {
          reading.onPoolReadFailed?.(pool.name, err);
          return undefined;
        });
        // A pool that ended between the list and the query has nothing to count.
        if (!view) return undefined;
        mode = view.settings.mode;
        const { statuses, agents } = countStatuses(view.runners);
        snapshot = { pool: pool.name, provider: view.settings.provider, runnersByStatus: statuses, runnersByAgent: agents, queuedJobs: queuedJobCount(view) };
      }
      if (mode !== 'scaleSet') return snapshot;
      // A scale-set pool takes jobs only through a listener that holds a session: one stuck in
      // `conflict` (another listener holds the scale set) or gone leaves idle runners and waiting jobs.
      const listener = await query(scaleSetListenerId(pool.name), (id) => client.workflow.getHandle(id).query(scaleSetStateQuery)).catch(() => undefined);
      const differs = listener ? scaleSetDifferences(listener) : [];
      return { ...snapshot, scaleSetListener: listener?.status ?? 'absent', ...(differs.length > 0 ? { scaleSetDiffers: differs } : {}) };
    }),
  );
  return snapshots.filter((s) => s !== undefined);
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
      const snapshots = readPoolSnapshots(openOnly, directory, { queryTimeoutMs: options.queryTimeoutMs, onPoolReadFailed: options.onPoolReadFailed, fromGlance: true });
      cached = { at: now, snapshots };
      snapshots.catch(() => (cached = undefined));
    }
    return cached.snapshots;
  });
}
