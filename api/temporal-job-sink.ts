/**
 * Turns workflow_job webhooks into workflow signals. Started/completed jobs go
 * to the runner that owns them (and, as progress, to its pool); queued jobs go
 * to the best matching pool, or are recorded as unmatched so operators see them.
 */
import type { Client } from '@temporalio/client';
import { poolMatchesLabels } from '../domain/pool';
import { RUNNER_POOL } from '../workflows/search-attributes';
import { jobCompletedSignal, jobStartedSignal, runnerWorkflowId, type JobCompletedArgs, type JobStartedArgs } from '../workflows/messages';
import {
  UNMATCHED_JOBS_WORKFLOW,
  unmatchedJobsWorkflowId,
  jobProgressSignal,
  jobQueuedSignal,
  poolStateQuery,
  poolWorkflowId,
  unmatchedJobSignal,
  type JobProgressArgs,
  type QueuedJob,
} from '../workflows/pool-messages';
import type { Logger } from './deps';
import { candidatePools, freeCapacity, mostFree, type RoutableEntry } from './job-routing';
import type { PoolDirectory } from './pool-directory';
import type { JobTiming, SignalOutcome, WorkflowJobSink } from './webhooks/github';
import { jobQueueSeconds } from '../observability/metrics';
import { isNotFound } from './temporal/errors';

export interface TemporalJobSinkDeps {
  client: Client;
  taskQueue: string;
  pools: PoolDirectory;
  logger: Logger;
  /** Bound on each poolState query used to break priority ties. */
  queryTimeoutMs: number;
}

export class TemporalJobSink implements WorkflowJobSink {
  constructor(private readonly deps: TemporalJobSinkDeps) {}

  async jobQueued(job: QueuedJob & { deliveryId: string }): Promise<void> {
    const { deliveryId, ...queued } = job;
    let refreshed = false;
    for (let attempt = 0; attempt < 3; attempt++) {
      const candidates = candidatePools(await this.deps.pools.list(), queued.labels, queued.repository);
      if (candidates.kind === 'none') {
        // The list may predate a pool created moments ago: look once more, fresh, before giving up.
        if (!refreshed) {
          refreshed = true;
          this.deps.pools.invalidate();
          continue;
        }
        await this.recordUnmatched(queued, candidates.reason);
        return;
      }
      const pool = await this.pickByCapacity(candidates.pools);
      try {
        await this.deps.client.workflow.getHandle(pool.workflowId).signal(jobQueuedSignal, queued);
        this.deps.logger.info('job routed to pool', { jobId: queued.jobId, pool: pool.name, deliveryId });
        return;
      } catch (err) {
        // The pool ended since the list was read: read it again once.
        if (!isNotFound(err)) throw err;
        this.deps.pools.invalidate();
      }
    }
    await this.recordUnmatched(queued, 'the matching pool ended while the job was routed');
  }

  /** A queued job was cancelled before any runner took it: the pools that could hold it stop counting it. */
  async jobLeftQueue(job: { jobId: number; labels: string[]; deliveryId: string }): Promise<void> {
    const holders = (await this.deps.pools.list()).filter((p) => p.memo && poolMatchesLabels(p.memo, job.labels));
    const progress: JobProgressArgs = { jobId: job.jobId, action: 'completed' };
    await Promise.all(holders.map((pool) => this.progressTo(pool.workflowId, progress)));
  }

  jobStarted(runnerName: string, args: JobStartedArgs, timing?: JobTiming): Promise<SignalOutcome> {
    const progress: JobProgressArgs = { jobId: args.jobId, action: 'in_progress', runnerName };
    return this.toRunner(runnerName, (h) => h.signal(jobStartedSignal, args), progress, (pool) => observeQueueTime(pool, timing));
  }

  jobCompleted(runnerName: string, args: JobCompletedArgs): Promise<SignalOutcome> {
    return this.toRunner(runnerName, (h) => h.signal(jobCompletedSignal, args), { jobId: args.jobId, action: 'completed', runnerName });
  }

  private async toRunner(
    runnerName: string,
    send: (handle: ReturnType<Client['workflow']['getHandle']>) => Promise<void>,
    progress: JobProgressArgs,
    onSignalled?: (pool: string) => void,
  ): Promise<SignalOutcome> {
    const handle = this.deps.client.workflow.getHandle(runnerWorkflowId(runnerName));
    let pool: string | undefined;
    try {
      const description = await handle.describe();
      if (description.status.name !== 'RUNNING') return 'not_owned';
      pool = description.typedSearchAttributes.get(RUNNER_POOL);
      await send(handle);
    } catch (err) {
      if (isNotFound(err)) return 'not_owned';
      throw err;
    }
    if (pool) {
      onSignalled?.(pool);
      await this.progressTo(poolWorkflowId(pool), progress);
    }
    return 'signalled';
  }

  private async progressTo(poolWorkflow: string, progress: JobProgressArgs): Promise<void> {
    try {
      await this.deps.client.workflow.getHandle(poolWorkflow).signal(jobProgressSignal, progress);
    } catch (err) {
      // A pool that is gone has nothing left to track.
      if (!isNotFound(err)) throw err;
    }
  }

  private async pickByCapacity(pools: RoutableEntry[]): Promise<RoutableEntry> {
    if (pools.length === 1) return pools[0]!;
    const capacities = await Promise.all(
      pools.map(async (pool) => {
        try {
          const view = await this.deps.client.withDeadline(Date.now() + this.deps.queryTimeoutMs, () =>
            this.deps.client.workflow.getHandle(pool.workflowId).query(poolStateQuery),
          );
          return freeCapacity(view);
        } catch (err) {
          this.deps.logger.warn('pool state unavailable while routing a job', { pool: pool.name, error: (err as Error).message });
          return undefined;
        }
      }),
    );
    return pools[mostFree(capacities)]!;
  }

  private async recordUnmatched(job: QueuedJob, reason: string): Promise<void> {
    await this.deps.client.workflow.signalWithStart(UNMATCHED_JOBS_WORKFLOW, {
      workflowId: unmatchedJobsWorkflowId(this.deps.taskQueue),
      taskQueue: this.deps.taskQueue,
      args: [],
      signal: unmatchedJobSignal,
      signalArgs: [{ ...job, reason, recordedAt: new Date().toISOString() }],
    });
    this.deps.logger.info('job matched no pool', { jobId: job.jobId, reason });
  }
}

/** Only jobs that started on one of our runners count: the pool they waited for is then known. */
function observeQueueTime(pool: string, timing: JobTiming | undefined): void {
  const created = Date.parse(timing?.createdAt ?? '');
  const started = Date.parse(timing?.startedAt ?? '');
  if (Number.isNaN(created) || Number.isNaN(started) || started < created) return;
  jobQueueSeconds.observe({ pool }, (started - created) / 1000);
}
