/** One pool as the dashboard's summary shows it: its size, its runners counted by phase, its queue. */
import { poolStateQuery, poolWorkflowId, queuedJobCount, type PoolView } from '../../workflows/pool-messages';
import type { PoolEntry } from '../pool-directory';
import type { Services } from '../services';
import { temporalFailureReason } from '../temporal/errors';
import { countRunners, runnerPhase, type PoolCounts } from '../../domain/pool-counts';

export interface PoolOverview {
  name: string;
  workflowId: string;
  runId: string;
  provider?: string;
  enabled?: boolean;
  labels?: string[];
  minIdleRunners?: number;
  maxRunners?: number;
  /** Runners the pool wants right now (min idle + queued jobs, capped at max). */
  desired?: number;
  counts?: PoolCounts;
  queuedJobs?: number;
  deleting?: boolean;
  /** `webhook` or `scaleSet` (GitHub's runner scale sets; GET /api/v1/pools/:name shows the scale set). */
  mode?: string;
  /** The pool did not answer its query; the rest of the summary still stands. */
  error?: string;
  /**
   * When the pool last wrote the counts shown (its memo's glance), when they come from there; a
   * pool writes them when they change, so an old time on a quiet pool is no sign of trouble.
   */
  glanceAt?: string;
}

/** The pool's own view with each runner's phase and the counts, as GET /api/v1/pools/:name answers. */
export function withCounts(view: PoolView): PoolView & { counts: PoolCounts; runners: (PoolView['runners'][number] & { phase: string })[] } {
  return { ...view, runners: view.runners.map((r) => ({ ...r, phase: runnerPhase(r) })), counts: countRunners(view.runners) };
}

/**
 * One pool for the summary: from the glance in its memo when it wrote one (no query: every open
 * dashboard reads every pool every few seconds), else asked of the pool.
 */
export async function poolOverview(services: Services, entry: PoolEntry): Promise<PoolOverview> {
  const base = { name: entry.name, workflowId: entry.workflowId, runId: entry.runId, provider: entry.memo?.provider, enabled: entry.memo?.enabled };
  const memo = entry.memo;
  if (memo?.glance) {
    const { glance } = memo;
    return {
      ...base,
      mode: memo.mode ?? 'webhook',
      labels: memo.labels,
      minIdleRunners: glance.minIdleRunners,
      maxRunners: memo.maxRunners,
      desired: glance.desired,
      counts: glance.counts,
      queuedJobs: glance.queuedJobs,
      deleting: memo.deleting === true,
      glanceAt: new Date(glance.at).toISOString(),
    };
  }
  let view: PoolView;
  try {
    const { client } = services.deps;
    const deadline = Date.now() + Math.min(services.limits.summaryPoolTimeoutMs, services.limits.queryTimeoutMs);
    view = await client.withDeadline(deadline, () => client.workflow.getHandle(poolWorkflowId(entry.name)).query(poolStateQuery));
  } catch (err) {
    services.stuckWorkflows.heardPool(entry.name, err);
    return { ...base, error: temporalFailureReason(err, services.deps.taskQueue) };
  }
  const { settings } = view;
  return {
    ...base,
    provider: settings.provider,
    mode: settings.mode,
    enabled: settings.enabled,
    labels: settings.labels,
    minIdleRunners: settings.minIdleRunners,
    maxRunners: settings.maxRunners,
    desired: view.target,
    counts: countRunners(view.runners),
    queuedJobs: queuedJobCount(view),
    deleting: view.deleting,
  };
}
