/**
 * The unmatched-jobs record travels whole in every query answer and continue-as-new, which the
 * server holds to 2 MB. Jobs no pool takes can carry up to 9 KiB of labels each; 500 of them
 * would not fit, and a record that cannot continue or answer is lost to operators.
 */
import { describe, expect, it } from 'vitest';
import { jobsUnmatchedSignal, UNMATCHED_JOBS_WORKFLOW, unmatchedJobsQuery, type UnmatchedJob } from '../../workflows/pool-messages';
import { uniqueName, useTestWorker } from '../support/temporal';

const env = useTestWorker();

describe('the unmatched-jobs record', () => {
  it('keeps its newest jobs within a size it can always carry and answer, and cuts a long reason', async () => {
    const handle = await env.client.workflow.start(UNMATCHED_JOBS_WORKFLOW, { taskQueue: env.w.taskQueue, workflowId: uniqueName('unmatched-big'), args: [[]] });
    const heavyLabels = Array.from({ length: 32 }, (_, i) => `${i}-${'l'.repeat(250)}`);
    const job = (jobId: number): UnmatchedJob => ({ jobId, labels: heavyLabels, repository: 'acme/big', reason: `no pool has these labels; pools: ${'p,'.repeat(2_000)}` });
    // 300 jobs of about 9 KB: 2.7 MB in all, sent 50 to a signal.
    for (let batch = 0; batch < 6; batch++) {
      await handle.signal(jobsUnmatchedSignal, { jobs: Array.from({ length: 50 }, (_, i) => job(batch * 50 + i + 1)) });
    }
    const recorded = await handle.query(unmatchedJobsQuery);
    expect(JSON.stringify(recorded).length).toBeLessThanOrEqual(1_500_000);
    expect(recorded.length).toBeGreaterThan(100);
    expect(recorded.length).toBeLessThan(300);
    // The newest are kept, in order; the oldest went.
    expect(recorded.at(-1)!.jobId).toBe(300);
    expect(recorded.map((j) => j.jobId)).toEqual(Array.from({ length: recorded.length }, (_, i) => 300 - recorded.length + 1 + i));
    expect(recorded.every((j) => j.reason.length === 1_000)).toBe(true);
    await handle.terminate('test done');
  });

  it('counts its size in bytes, as the server does, when labels are not ASCII', async () => {
    const handle = await env.client.workflow.start(UNMATCHED_JOBS_WORKFLOW, { taskQueue: env.w.taskQueue, workflowId: uniqueName('unmatched-utf8'), args: [[]] });
    // 32 labels of 90 euro signs: 2,900 characters, 8.6 KB as UTF-8.
    const labels = Array.from({ length: 32 }, (_, i) => `${i}${'€'.repeat(90)}`);
    for (let batch = 0; batch < 6; batch++) {
      await handle.signal(jobsUnmatchedSignal, { jobs: Array.from({ length: 50 }, (_, i) => ({ jobId: batch * 50 + i + 1, labels, reason: 'no pool has these labels' })) });
    }
    const recorded = await handle.query(unmatchedJobsQuery);
    expect(Buffer.byteLength(JSON.stringify(recorded))).toBeLessThanOrEqual(1_500_000);
    expect(recorded.at(-1)!.jobId).toBe(300);
    await handle.terminate('test done');
  });
});
