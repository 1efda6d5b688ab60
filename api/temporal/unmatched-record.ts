/**
 * Adds jobs to an installation's record of jobs no pool could take (the
 * unmatchedJobs workflow), starting the record if it is not running. Used by
 * the webhook intake and by relays whose pool ended.
 */
import type { Client } from '@temporalio/client';
import { jobsUnmatchedSignal, UNMATCHED_JOBS_WORKFLOW, unmatchedJobsQuery, unmatchedJobsWorkflowId, type UnmatchedJob } from '../../workflows/pool-messages';
import { isNotFound } from './errors';

export async function recordUnmatchedJobs(client: Client, record: { workflowId: string; taskQueue: string }, jobs: UnmatchedJob[]): Promise<void> {
  await client.workflow.signalWithStart(UNMATCHED_JOBS_WORKFLOW, {
    workflowId: record.workflowId,
    taskQueue: record.taskQueue,
    args: [],
    signal: jobsUnmatchedSignal,
    signalArgs: [{ jobs }],
  });
}

/**
 * The installation's record of jobs no pool could take, read within `bounded`'s deadline. None
 * when there is no record: the first such job starts it.
 */
export async function readUnmatchedJobs(client: Client, taskQueue: string, bounded: <R>(fn: () => Promise<R>) => Promise<R>): Promise<UnmatchedJob[]> {
  const handle = client.workflow.getHandle(unmatchedJobsWorkflowId(taskQueue));
  try {
    return await bounded(() => handle.query(unmatchedJobsQuery));
  } catch (err) {
    if (isNotFound(err)) return [];
    throw err;
  }
}
