/**
 * What a jobRelay workflow does with its jobs: the same signals the webhook
 * intake sends, from the worker, retried by the relay until they land.
 */
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { recordUnmatchedJobs } from '../api/temporal/unmatched-record';
import { jobsQueuedSignal, unmatchedJobsWorkflowId, type QueuedJob, type UnmatchedJob } from '../workflows/pool-messages';
import type { RelayTarget } from '../workflows/relay-messages';

export interface ForwardRelayedJobsArgs {
  target: RelayTarget;
  jobs: (QueuedJob | UnmatchedJob)[];
}

export interface ForwardRelayedJobsResult {
  /** Jobs whose pool had ended: recorded as unmatched instead. */
  unmatched: number;
}

export function createRelayActivities(deps: { client: Client }) {
  const recordUnmatched = (jobs: UnmatchedJob[], workflowId?: string): Promise<void> => {
    const taskQueue = Context.current().info.taskQueue;
    return recordUnmatchedJobs(deps.client, { workflowId: workflowId ?? unmatchedJobsWorkflowId(taskQueue), taskQueue }, jobs);
  };

  return {
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
