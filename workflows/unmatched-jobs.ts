/**
 * unmatchedJobs: the jobs no pool could take, kept so operators can see them
 * (and fix a pool's labels) instead of finding out from a stuck CI queue.
 */
import { jsonBytes } from '../domain/json-size';
import { allHandlersFinished, condition, continueAsNew, setHandler, workflowInfo } from '@temporalio/workflow';
import { jobsUnmatchedSignal, POOL_MESSAGE_DESCRIPTIONS, unmatchedJobSignal, unmatchedJobsQuery, type UnmatchedJob } from './pool-messages';
import { queuedJobsArgs } from './signal-input';

const KEEP = 500;
/**
 * The record's size as JSON, at most: it travels whole in every query answer and every
 * continue-as-new, and the server takes 2 MB in one payload. Past that the record could not
 * continue, and every read of it would fail. Oldest jobs go first.
 */
const MAX_RECORD_BYTES = 1_500_000;
/** A reason names the pools that did not fit; with many pools, the start of the list says enough. */
const MAX_REASON_LENGTH = 1_000;

export async function unmatchedJobs(carried: UnmatchedJob[] = []): Promise<void> {
  const jobs: UnmatchedJob[] = [];
  const sizes: number[] = [];
  let bytes = 0;
  const known = new Set<number>();
  setHandler(unmatchedJobsQuery, () => [...jobs], { description: POOL_MESSAGE_DESCRIPTIONS.unmatchedJobs });
  function dropOldest(): void {
    const dropped = jobs.shift()!;
    bytes -= sizes.shift()!;
    known.delete(dropped.jobId);
  }
  function record(job: UnmatchedJob): void {
    if (known.has(job.jobId)) return;
    const reason = typeof job.reason === 'string' ? job.reason.slice(0, MAX_REASON_LENGTH) : 'no reason given';
    const kept = { ...job, reason, recordedAt: job.recordedAt ?? new Date().toISOString() };
    known.add(job.jobId);
    jobs.push(kept);
    sizes.push(jsonBytes(kept));
    bytes += sizes.at(-1)!;
    while (jobs.length > KEEP || (bytes > MAX_RECORD_BYTES && jobs.length > 1)) dropOldest();
  }
  // Carried jobs go through the same bounds as new ones.
  for (const job of carried) record(job);
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
