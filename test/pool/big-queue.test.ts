/**
 * On the real server: a pool with more jobs queued than it keeps still answers
 * its state query, continues as new with every job it keeps, and tells the
 * sweep which of a given set of jobs it knows. Before the queue was packed and
 * bounded, a pool holding 15,000 queued jobs failed its state query ("Blob
 * data size exceeds limit"), and its continue-as-new would have too.
 */
import { describe, expect, it } from 'vitest';
import { deletePoolSignal, jobsQueuedSignal, knownJobsQuery, poolStateQuery, type QueuedJob } from '../../workflows/pool-messages';
import { MAX_KEPT } from '../../workflows/queued-jobs';
import { eventually, useTestWorker } from '../support/temporal';
import { poolSettings, startPool } from './helpers';

const env = useTestWorker();

describe('a pool with a very long queue', () => {
  it('keeps its bound of queued jobs across continue-as-new, counts the ones it drops, and still answers queries', async () => {
    const settings = poolSettings({ minIdleRunners: 0, maxRunners: 0 });
    const pool = await startPool(env.client, env.w.taskQueue, { settings, historyLimit: 80 });
    const firstRunId = (await pool.describe()).runId;
    const queuedAt = new Date().toISOString();
    const total = MAX_KEPT + 2_000;
    const id = (i: number) => 7_000_000_000 + i;
    for (let from = 0; from < total; from += 500) {
      const jobs: QueuedJob[] = Array.from({ length: Math.min(500, total - from) }, (_, k) => ({
        jobId: id(from + k),
        runId: 8_000_000_000 + Math.floor((from + k) / 256),
        labels: ['self-hosted', 'linux', 'x64', 'matrix-build'],
        repository: 'octo-org/a-repository-with-a-long-name',
        queuedAt,
      }));
      await pool.signal(jobsQueuedSignal, { jobs });
    }
    const view = await eventually(async () => {
      const v = await pool.query(poolStateQuery);
      return v.queuedJobCount === MAX_KEPT && v.queuedJobsDropped === 2_000 ? v : undefined;
    }, 60_000, 'every job counted');
    expect(view.queuedJobs).toHaveLength(200);
    expect(view.queuedJobs[0]!.jobId).toBe(id(0));

    // Signals grow the history until the pool continues as new.
    await eventually(async () => {
      await pool.signal(jobsQueuedSignal, { jobs: [] });
      return (await pool.describe()).runId !== firstRunId;
    }, 60_000, 'continue-as-new');
    const after = await pool.query(poolStateQuery);
    expect(after.queuedJobCount).toBe(MAX_KEPT);
    expect(after.queuedJobsDropped).toBe(2_000);
    expect(after.queuedJobs).toEqual(view.queuedJobs);
    expect(await pool.query(knownJobsQuery, { jobIds: [id(0), id(MAX_KEPT - 1), id(MAX_KEPT), 42] })).toEqual([id(0), id(MAX_KEPT - 1)]);

    await pool.signal(deletePoolSignal, {});
    await pool.result();
  }, 150_000);
});
