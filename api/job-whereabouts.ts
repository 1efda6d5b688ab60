/**
 * Where a GitHub job is as runnerflow sees it, and what it waits for: an operator's first
 * question when a job sits queued. Read from the pools (which one counts it queued, or has a
 * runner on it) and the unmatched-jobs record; nothing is stored for it.
 */
import type { Client } from '@temporalio/client';
import { poolNameOf, poolStateQuery, queuedJobCount, type PoolView, type UnmatchedJob } from '../workflows/pool-messages';
import type { RunnerStatus, InstanceStatus } from '../domain/instance-status';
import { countRunners } from '../domain/pool-counts';
import type { PoolEntry } from './pool-directory';
import { poolsKnowingJobs } from './temporal/known-jobs';

export type JobWhereabouts =
  /** `finished`: the runner that took it is done with it (idle again, or leaving), as its pool last heard. */
  | { jobId: number; state: 'running' | 'finished'; pool: string; runner: { name: string; status: InstanceStatus; runnerStatus: RunnerStatus } }
  | {
      jobId: number;
      state: 'queued';
      pool: string;
      /** From the pool's list of its oldest queued jobs; absent for a job further back. */
      labels?: string[];
      repository?: string;
      queuedAt?: string;
      /** Jobs the pool has queued ahead of this one, when it is among those listed. */
      ahead?: number;
      /** Why no runner has taken it yet, most telling first. */
      waitingFor: string[];
    }
  | { jobId: number; state: 'unmatched'; labels: string[]; repository?: string; reason: string; recordedAt?: string };

export interface JobLookupDeps {
  client: Client;
  pools: readonly PoolEntry[];
  unmatched: () => Promise<UnmatchedJob[]>;
  queryTimeoutMs: number;
}

/** Undefined: no pool counts the job and it is not recorded as unmatched. */
export async function findJob(deps: JobLookupDeps, jobId: number): Promise<JobWhereabouts | undefined> {
  const knowing = (await poolsKnowingJobs(deps.client, deps.pools.filter((p) => p.memo), [jobId], deps.queryTimeoutMs)).get(jobId) ?? [];
  for (const workflowId of knowing) {
    let view: PoolView;
    try {
      view = await deps.client.withDeadline(Date.now() + deps.queryTimeoutMs, () => deps.client.workflow.getHandle(workflowId).query(poolStateQuery));
    } catch {
      continue;
    }
    const pool = poolNameOf(workflowId) ?? view.settings.name;
    const runner = view.runners.find((r) => r.jobId === jobId);
    // A runner keeps naming its last job once it is done with it: a static one idle again, an ephemeral one on its way out.
    if (runner) return { jobId, state: runner.runnerStatus === 'active' ? 'running' : 'finished', pool, runner: { name: runner.name, status: runner.status, runnerStatus: runner.runnerStatus } };
    const at = view.queuedJobs.findIndex((j) => j.jobId === jobId);
    const listed = at >= 0 ? view.queuedJobs[at] : undefined;
    return {
      jobId,
      state: 'queued',
      pool,
      ...(listed ? { labels: listed.labels, ...(listed.repository ? { repository: listed.repository } : {}), ...(listed.queuedAt ? { queuedAt: listed.queuedAt } : {}), ahead: at } : {}),
      waitingFor: waitingFor(view),
    };
  }
  const unmatched = (await deps.unmatched()).filter((j) => j.jobId === jobId).at(-1);
  if (unmatched) {
    return {
      jobId,
      state: 'unmatched',
      labels: unmatched.labels,
      ...(unmatched.repository ? { repository: unmatched.repository } : {}),
      reason: unmatched.reason,
      ...(unmatched.recordedAt ? { recordedAt: unmatched.recordedAt } : {}),
    };
  }
  return undefined;
}

/** What keeps a pool's queued jobs waiting, as its state view shows it. */
export function waitingFor(view: PoolView): string[] {
  const name = view.settings.name;
  if (view.deleting) return [`pool ${name} is being deleted: it takes no new jobs and passes its queue on to other pools`];
  if (!view.settings.enabled) return [`pool ${name} is disabled: it makes no runners and passes its queue on to other pools (runnerflow pool update ${name} --enabled true)`];
  const counts = countRunners(view.runners);
  const machines = view.runners.length;
  const queued = queuedJobCount(view);
  const reasons: string[] = [];
  if (machines >= view.settings.maxRunners) {
    reasons.push(
      `pool ${name} is at its maximum: ${machines} of ${view.settings.maxRunners} machines (${counts.busy} busy, ${counts.leaving} leaving); a runner is made once one goes, or raise maxRunners`,
    );
  }
  if (counts.starting > 0) reasons.push(`${counts.starting} runner${counts.starting === 1 ? ' is' : 's are'} starting for the pool's queue`);
  if (counts.idle > 0) reasons.push(`${counts.idle} runner${counts.idle === 1 ? ' is' : 's are'} idle: GitHub hands a queued job to one within seconds`);
  if (reasons.length === 0) reasons.push(`the pool wants ${view.target} runners for ${queued} queued job${queued === 1 ? '' : 's'}: its next decision makes them`);
  return reasons;
}
