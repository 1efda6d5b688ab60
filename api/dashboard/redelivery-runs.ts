/**
 * Failed webhook deliveries as operators follow them: each credentials' redelivery
 * schedule (`redelivery/<credentials>`), and what its last passes asked for again.
 */
import type { Client } from '@temporalio/client';
import type { RedeliveryReport } from '../../activities/webhook-redelivery-activities';
import { redeliveryScheduleId } from '../../worker/redelivery-schedule';
import { scheduleView, type ScheduledRun, type ScheduleView } from './schedule-runs';

/** Counts from one pass's report. */
export interface RedeliveryResult {
  /** Delivery attempts read. */
  examined: number;
  /** Failed deliveries asked for again. */
  redelivered: number;
  /** Deliveries given up: events lost for good. */
  givenUp: number;
  /** Failed deliveries still followed after the pass. */
  failing: number;
  /** Token credentials: the repository and organisation webhooks followed. */
  hooks?: string[];
  /** Token credentials: organisations of an enterprise's pools whose webhooks GitHub would not list to them (not failures). */
  unreadable?: string[];
  truncated: boolean;
  failures: { target: string; error: string }[];
}

export type RedeliveryRun = ScheduledRun<RedeliveryResult>;
export type CredentialsRedelivery = { credentials: string } & ScheduleView<RedeliveryResult>;

/** A few are enough to see what failed; the full report is in the Web UI. */
const FAILURES_SHOWN = 10;

function summarise(report: RedeliveryReport): RedeliveryResult {
  return {
    examined: report.examined,
    redelivered: report.redelivered.length,
    givenUp: report.givenUp.length,
    failing: report.failing,
    ...(report.hooks ? { hooks: report.hooks } : {}),
    ...(report.unreadable?.length ? { unreadable: report.unreadable } : {}),
    truncated: report.truncated,
    failures: report.failed.slice(0, FAILURES_SHOWN),
  };
}

export async function credentialsRedelivery(client: Client, credentials: string, runsShown: number): Promise<CredentialsRedelivery> {
  return { credentials, ...(await scheduleView(client, redeliveryScheduleId(credentials), runsShown, summarise)) };
}
