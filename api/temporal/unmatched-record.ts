/**
 * Adds jobs to an installation's record of jobs no pool could take (the
 * unmatchedJobs workflow), starting the record if it is not running. Used by
 * the webhook intake and by relays whose pool ended.
 */
import type { Client } from '@temporalio/client';
import { jobsUnmatchedSignal, UNMATCHED_JOBS_WORKFLOW, type UnmatchedJob } from '../../workflows/pool-messages';

export async function recordUnmatchedJobs(client: Client, record: { workflowId: string; taskQueue: string }, jobs: UnmatchedJob[]): Promise<void> {
  await client.workflow.signalWithStart(UNMATCHED_JOBS_WORKFLOW, {
    workflowId: record.workflowId,
    taskQueue: record.taskQueue,
    args: [],
    signal: jobsUnmatchedSignal,
    signalArgs: [{ jobs }],
  });
}
