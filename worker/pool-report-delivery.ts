/** The worker's side of workflows/pool-report-sink.ts: delivers a runner's unawaited report to its pool. */
import { ApplicationFailure } from '@temporalio/common';
import { Runtime, type InjectedSinks } from '@temporalio/worker';
import type { ReportToPoolArgs } from '../activities/pool-activities';
import type { PoolReportSinks } from '../workflows/pool-report-sink';

export interface DeliveryOptions {
  /** How long a report is tried while the server cannot be reached; as long as a restart of the server lasts. */
  giveUpAfterMs?: number;
  initialIntervalMs?: number;
  maxIntervalMs?: number;
}

const DEFAULTS = { giveUpAfterMs: 120_000, initialIntervalMs: 100, maxIntervalMs: 5_000 } satisfies Required<DeliveryOptions>;

/**
 * Tries `deliver` (the worker's `reportToPool`, which batches reports per pool) until it takes
 * the report, says no for good, or `giveUpAfterMs` has passed. Never throws: a report given up
 * is logged, and the pool's own look finds the runner (see the sink's comment).
 */
export async function deliverPatiently(deliver: (args: ReportToPoolArgs) => Promise<void>, args: ReportToPoolArgs, options: DeliveryOptions = {}): Promise<boolean> {
  const { giveUpAfterMs, initialIntervalMs, maxIntervalMs } = { ...DEFAULTS, ...options };
  const deadline = Date.now() + giveUpAfterMs;
  for (let wait = initialIntervalMs; ; wait = Math.min(wait * 2, maxIntervalMs)) {
    try {
      await deliver(args);
      return true;
    } catch (err) {
      const forGood = err instanceof ApplicationFailure && err.nonRetryable;
      if (forGood || Date.now() + wait > deadline) {
        Runtime.instance().logger.warn('pool not told of a runner; its look at its runners will ask again', {
          pool: args.pool,
          runner: args.report.name,
          error: err instanceof Error ? err.message : String(err),
        });
        return false;
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

export function poolReportSinks(deliver: (args: ReportToPoolArgs) => Promise<void>, options: DeliveryOptions = {}): InjectedSinks<PoolReportSinks> {
  return {
    unawaitedPoolReports: {
      send: { fn: (_info, args) => void deliverPatiently(deliver, args, options), callDuringReplay: false },
    },
  };
}
