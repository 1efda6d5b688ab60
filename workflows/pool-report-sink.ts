/**
 * A runner's reports to its pool that its workflow task does not wait for. A report sent from
 * a local activity holds the runner's workflow task open until the pool has it, and records a
 * marker; measured over a 1,000-runner scale-up, where each runner's one report is "idle", that
 * cost about a tenth of the machine's time per runner (bench/README.md). Sent through a sink, the
 * task completes at once and the worker delivers the report beside it.
 *
 * What a sink sends is not durable: a worker that dies before delivering it loses it. Only
 * reports the pool finds out about by itself go this way. A runner the pool still counts as
 * starting although its machine runs is asked to report again by the pool's look for ended
 * runners (activities/pool-audit-activities.ts).
 */
import { proxySinks, type Sinks } from '@temporalio/workflow';
import type { ReportToPoolArgs } from '../activities/pool-activities';

export interface PoolReportSinks extends Sinks {
  unawaitedPoolReports: {
    /** Delivered by the worker after the workflow task that made it; not called on replay. */
    send(args: ReportToPoolArgs): void;
  };
}

export const { unawaitedPoolReports } = proxySinks<PoolReportSinks>();
