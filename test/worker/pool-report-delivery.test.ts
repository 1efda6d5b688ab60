import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import type { ReportToPoolArgs } from '../../activities/pool-activities';
import { deliverPatiently } from '../../worker/pool-report-delivery';

const args: ReportToPoolArgs = { pool: 'linux', report: { name: 'linux-r1', seq: 1, status: 'running', runnerStatus: 'idle' } };
const fast = { initialIntervalMs: 5, maxIntervalMs: 20 };

describe('an unawaited report to a pool', () => {
  it('is tried again while the server cannot be reached, until the pool has it', async () => {
    let calls = 0;
    const delivered = await deliverPatiently(async () => {
      calls += 1;
      if (calls < 4) throw new Error('14 UNAVAILABLE: connection refused');
    }, args, { ...fast, giveUpAfterMs: 5_000 });
    expect(delivered).toBe(true);
    expect(calls).toBe(4);
  });

  it('is not tried again once the pool has refused it for good', async () => {
    let calls = 0;
    const delivered = await deliverPatiently(async () => {
      calls += 1;
      throw ApplicationFailure.nonRetryable('pool linux refused the report', 'PoolReportRefused');
    }, args, { ...fast, giveUpAfterMs: 5_000 });
    expect(delivered).toBe(false);
    expect(calls).toBe(1);
  });

  it('is given up once its time is over, without throwing', async () => {
    let calls = 0;
    const started = Date.now();
    const delivered = await deliverPatiently(async () => {
      calls += 1;
      throw new Error('14 UNAVAILABLE: connection refused');
    }, args, { ...fast, giveUpAfterMs: 100 });
    expect(delivered).toBe(false);
    expect(calls).toBeGreaterThan(2);
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
