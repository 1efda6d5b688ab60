/**
 * unmatchedJobs: the jobs no pool could take, kept so operators can see them
 * (and fix a pool's labels) instead of finding out from a stuck CI queue.
 */
import { allHandlersFinished, condition, continueAsNew, setHandler, workflowInfo } from '@temporalio/workflow';
import { POOL_MESSAGE_DESCRIPTIONS, unmatchedJobSignal, unmatchedJobsQuery, type UnmatchedJob } from './pool-messages';

const KEEP = 500;

export async function unmatchedJobs(carried: UnmatchedJob[] = []): Promise<void> {
  const jobs = [...carried];
  setHandler(unmatchedJobsQuery, () => [...jobs], { description: POOL_MESSAGE_DESCRIPTIONS.unmatchedJobs });
  setHandler(unmatchedJobSignal, (job) => {
    if (jobs.some((j) => j.jobId === job.jobId)) return;
    jobs.push({ ...job, recordedAt: job.recordedAt ?? new Date().toISOString() });
    if (jobs.length > KEEP) jobs.splice(0, jobs.length - KEEP);
  }, { description: POOL_MESSAGE_DESCRIPTIONS.unmatchedJob });
  await condition(() => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > 2_000);
  await condition(allHandlersFinished);
  await continueAsNew<typeof unmatchedJobs>(jobs);
}
