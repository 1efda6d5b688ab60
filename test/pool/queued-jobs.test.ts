/**
 * A pool's queued jobs: packed for continue-as-new, listed oldest first and
 * bounded in its view, bounded in number.
 */
import { describe, expect, it } from 'vitest';
import type { QueuedJob } from '../../workflows/pool-messages';
import { QueuedJobs } from '../../workflows/queued-jobs';

const at = (ms: number) => new Date(ms).toISOString();
const job = (jobId: number, queuedAtMs: number, labels = ['self-hosted', 'linux'], repository: string | undefined = 'octo-org/app'): QueuedJob => ({
  jobId,
  runId: jobId + 1,
  labels,
  ...(repository ? { repository } : {}),
  queuedAt: at(queuedAtMs),
});

describe('QueuedJobs', () => {
  it('carries every job through pack and restore, labels and repositories written once each', () => {
    const jobs = new QueuedJobs();
    for (let i = 0; i < 1_000; i++) jobs.add(job(i, 1_000 + i, i % 2 ? ['gpu'] : ['self-hosted', 'linux'], i % 3 ? 'octo-org/app' : undefined), 0);
    jobs.add({ jobId: 5_000, labels: ['x'] }, 42);
    const packed = jobs.pack();
    expect(packed.labels).toHaveLength(3);
    expect(packed.repositories).toEqual(['octo-org/app']);
    expect(packed.jobs).toHaveLength(5 * 1_001);

    const restored = new QueuedJobs();
    restored.restore(JSON.parse(JSON.stringify(packed)) as typeof packed, undefined, 0);
    expect(restored.size).toBe(1_001);
    expect(restored.list(Number.POSITIVE_INFINITY)).toEqual(jobs.list(Number.POSITIVE_INFINITY));
    expect(restored.list(2)).toEqual([job(0, 1_000, ['self-hosted', 'linux'], undefined), job(1, 1_001, ['gpu'])]);
    // A job that came without a time is queued from when the pool saw it.
    expect(restored.list(Number.POSITIVE_INFINITY).at(-1)).toEqual({ jobId: 5_000, labels: ['x'], queuedAt: at(42) });
  });

  it('packs 20,000 jobs of one matrix build well inside the payload limit', () => {
    const jobs = new QueuedJobs();
    for (let i = 0; i < 20_000; i++) jobs.add(job(7_000_000_000 + i, 1_795_000_000_000 + i), 0);
    const bytes = JSON.stringify(jobs.pack()).length;
    // The list form took about 180 bytes a job, 3.6 MB: more than the server's 2 MB.
    expect(bytes).toBeLessThan(1_000_000);
  });

  it('reads the list older runs carried', () => {
    const jobs = new QueuedJobs();
    jobs.restore(undefined, [job(1, 10), job(2, 20)], 0);
    expect(jobs.list().map((j) => j.jobId)).toEqual([1, 2]);
  });

  it('keeps at most its bound, and takes a job again once there is room', () => {
    const jobs = new QueuedJobs(3);
    expect([1, 2, 3, 4].map((id) => jobs.add(job(id, id), 0))).toEqual([true, true, true, false]);
    // A job it holds can be told again (a redelivery) without counting twice.
    expect(jobs.add(job(2, 2), 0)).toBe(true);
    expect(jobs.size).toBe(3);
    jobs.delete(1);
    expect(jobs.add(job(4, 4), 0)).toBe(true);
    expect(jobs.list().map((j) => j.jobId)).toEqual([2, 3, 4]);
  });

  it('drops jobs past their time to live and names the next expiry', () => {
    const jobs = new QueuedJobs();
    jobs.add(job(1, 1_000), 0);
    jobs.add(job(2, 5_000), 0);
    jobs.add(job(3, 3_000), 0);
    expect(jobs.expire(3_500, 1_000)).toBe(4_000);
    expect(jobs.list().map((j) => j.jobId)).toEqual([2, 3]);
    expect(jobs.expire(4_000, 1_000)).toBe(6_000);
    expect(jobs.list().map((j) => j.jobId)).toEqual([2]);
    expect(jobs.expire(7_000, 1_000)).toBeUndefined();
    expect(jobs.size).toBe(0);
  });
});
