/**
 * unmatchedJobs: the jobs no pool could take, kept so operators can see them
 * (and fix a pool's labels) instead of finding out from a stuck CI queue.
 */
import { allHandlersFinished, condition, continueAsNew, setHandler, workflowInfo } from '@temporalio/workflow';
import { jobsUnmatchedSignal, POOL_MESSAGE_DESCRIPTIONS, unmatchedJobSignal, unmatchedJobsQuery, type UnmatchedJob } from './pool-messages';
import { queuedJobsArgs } from './signal-input';

const KEEP = 500;

export async function unmatchedJobs(carried: UnmatchedJob[] = []): Promise<void> {
  const jobs = [...carried];
  setHandler(unmatchedJobsQuery, () => [...jobs], { description: POOL_MESSAGE_DESCRIPTIONS.unmatchedJobs });
  const known = new Set(carried.map((j) => j.jobId));
  function record(job: UnmatchedJob): void {
    if (known.has(job.jobId)) return;
    known.add(job.jobId);
    jobs.push({ ...job, recordedAt: job.recordedAt ?? new Date().toISOString() });
    if (jobs.length > KEEP) for (const dropped of jobs.splice(0, jobs.length - KEEP)) known.delete(dropped.jobId);
  }
  // Checked first: a handler that threw on a malformed job would fail every retry of this task.
  function recordValid(signal: string, batch: unknown): void {
    for (const job of queuedJobsArgs(signal, batch)) {
      const { reason } = job as { reason?: unknown };
      record({ ...job, reason: typeof reason === 'string' ? reason : 'no reason given' });
    }
  }
  setHandler(unmatchedJobSignal, (job) => recordValid('unmatchedJob', [job]), { description: POOL_MESSAGE_DESCRIPTIONS.unmatchedJob });
  setHandler(jobsUnmatchedSignal, (args) => recordValid('jobsUnmatched', (args as { jobs?: unknown } | undefined)?.jobs), { description: POOL_MESSAGE_DESCRIPTIONS.jobsUnmatched });
  await condition(() => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > 2_000);
  await condition(allHandlersFinished);
  await continueAsNew<typeof unmatchedJobs>(jobs);
}
