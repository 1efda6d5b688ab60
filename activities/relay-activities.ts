/**
 * What a jobRelay workflow does with its jobs: the same signals the webhook
 * intake sends, from the worker, retried by the relay until they land.
 */
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { candidatePools } from '../api/job-routing';
import { PoolDirectory } from '../api/pool-directory';
import { recordUnmatchedJobs } from '../api/temporal/unmatched-record';
import { jobsQueuedSignal, unmatchedJobsWorkflowId, type QueuedJob, type UnmatchedJob } from '../workflows/pool-messages';
import type { RelayTarget } from '../workflows/relay-messages';
import { activityTaskQueue } from './task-queue';
import { whileHeartbeating } from './heartbeat';

export interface ForwardRelayedJobsArgs {
  target: RelayTarget;
  jobs: (QueuedJob | UnmatchedJob)[];
}

export interface ForwardRelayedJobsResult {
  /** Jobs whose pool had ended: recorded as unmatched instead. */
  unmatched: number;
}

export interface PassOnJobsArgs {
  /** The pool passing its jobs on: never one of their targets. */
  from: string;
  jobs: QueuedJob[];
}

export interface PassOnJobsResult {
  /** How many jobs went to each pool that took some. */
  passedOn: Record<string, number>;
  /** Jobs no other pool could take: recorded as unmatched, with why. */
  unmatched: number;
}

export function createRelayActivities(deps: { client: Client }) {
  const recordUnmatched = (jobs: UnmatchedJob[], workflowId?: string): Promise<void> => {
    const taskQueue = Context.current().info.taskQueue;
    return recordUnmatchedJobs(deps.client, { workflowId: workflowId ?? unmatchedJobsWorkflowId(taskQueue), taskQueue }, jobs);
  };

  /** Signals each pool its jobs: how many each took, and the jobs of pools that ended since the listing. */
  async function signalPools(byPool: Map<string, QueuedJob[]>): Promise<{ passedOn: Record<string, number>; ended: QueuedJob[] }> {
    const passedOn: Record<string, number> = {};
    const ended: QueuedJob[] = [];
    for (const [workflowId, jobs] of byPool) {
      try {
        await deps.client.workflow.getHandle(workflowId).signal(jobsQueuedSignal, { jobs });
        passedOn[workflowId] = jobs.length;
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
        ended.push(...jobs);
      }
    }
    return { passedOn, ended };
  }

  /** See passOnJobs. */
  async function passOn({ from, jobs }: PassOnJobsArgs): Promise<PassOnJobsResult> {
    const pools = (await new PoolDirectory(deps.client, 0, activityTaskQueue()).fetch()).filter((p) => p.workflowId !== from);
    const byPool = new Map<string, QueuedJob[]>();
    const recordedAt = new Date().toISOString();
    const unmatched: UnmatchedJob[] = [];
    for (const job of jobs) {
      const candidates = candidatePools(pools, job.labels, job.repository);
      if (candidates.kind === 'none') {
        unmatched.push({ ...job, reason: `${candidates.reason} (${from} takes no jobs now)`, recordedAt });
        continue;
      }
      // Its scale set's listener takes it.
      if (candidates.kind === 'scaleSet') continue;
      // Equal priorities share the jobs: no capacity queries on a path this rare.
      const target = candidates.pools[job.jobId % candidates.pools.length]!.workflowId;
      byPool.set(target, [...(byPool.get(target) ?? []), job]);
    }
    const { passedOn, ended } = await signalPools(byPool);
    unmatched.push(...ended.map((job) => ({ ...job, reason: `the matching pool ended while the job was passed on from ${from}`, recordedAt })));
    if (unmatched.length > 0) await recordUnmatched(unmatched);
    return { passedOn, unmatched: unmatched.length };
  }

  return {
    /**
     * Routes the jobs of a pool that is being deleted or disabled as the webhook intake
     * would have, leaving that pool out: they were acknowledged to GitHub and have no other
     * way to a runner (the look for lost jobs covers repository pools only). A retried
     * attempt may signal a job twice; a pool's book takes each job once.
     */
    async passOnJobs(args: PassOnJobsArgs): Promise<PassOnJobsResult> {
      // Heartbeats: a pass whose worker died is retried within the pool's step heartbeat timeout.
      return whileHeartbeating(() => passOn(args));
    },

    async forwardRelayedJobs({ target, jobs }: ForwardRelayedJobsArgs): Promise<ForwardRelayedJobsResult> {
      if (target.kind === 'unmatched') {
        // The intake relays only unmatched jobs to the record, each with its reason.
        await recordUnmatched(jobs.map((job) => ({ reason: 'no pool matched', ...job })), target.workflowId);
        return { unmatched: 0 };
      }
      try {
        await deps.client.workflow.getHandle(target.workflowId).signal(jobsQueuedSignal, { jobs });
        return { unmatched: 0 };
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
        // The pool was deleted while its jobs waited here: operators still see them.
        const recordedAt = new Date().toISOString();
        await recordUnmatched(jobs.map((job) => ({ ...job, reason: 'the matching pool ended while the job was relayed', recordedAt })));
        return { unmatched: jobs.length };
      }
    },
  };
}

export type RelayActivities = ReturnType<typeof createRelayActivities>;
