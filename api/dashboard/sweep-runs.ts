/**
 * The orphan sweep as operators follow it: each provider's schedule
 * (`sweep/<provider>`), when it runs next, and what its last runs found;
 * and "sweep now", which goes through that schedule.
 */
import { ScheduleNotFoundError, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { SweepReport } from '../../activities/sweep-activities';
import { sweepScheduleId } from '../../worker/sweep-schedule';
import { scheduleView, type ScheduledRun, type ScheduleView } from './schedule-runs';

/** Counts from a sweep's report. */
export interface SweepResult {
  listed: number;
  owned: number;
  deleted: number;
  skipped: number;
  failed: number;
  deletedNames: string[];
  failures: { name: string; error: string }[];
  /**
   * What the sweep's GitHub side did, when it ran: registrations removed, lost jobs routed again, settled jobs taken out of pools' queues;
   * and, when there are any, the repositories (or organisations) GitHub refused to the look for lost jobs, which it leaves alone a while.
   */
  github?: { registrationsRemoved: number; jobsRequeued: number; jobsDequeued: number; jobIds: number[]; unreadable?: string[] };
}

export type SweepRun = ScheduledRun<SweepResult>;
export type ProviderSweep = { provider: string } & ScheduleView<SweepResult>;

/** A few names are enough to recognise a run; the full report is in the Web UI. */
const NAMES_SHOWN = 10;

export function summariseSweep(report: SweepReport): SweepResult {
  const github = report.github;
  return {
    listed: report.listed,
    owned: report.owned,
    deleted: report.deleted.length,
    skipped: report.skipped.length,
    failed: report.failed.length,
    deletedNames: report.deleted.slice(0, NAMES_SHOWN).map((d) => d.name),
    failures: report.failed.slice(0, NAMES_SHOWN),
    ...(github
      ? {
          github: {
            registrationsRemoved: github.removed.length,
            jobsRequeued: github.requeued.length,
            jobsDequeued: github.dequeued?.length ?? 0,
            jobIds: [...github.requeued.map((j) => j.jobId), ...(github.dequeued ?? []).map((j) => j.jobId)].slice(0, NAMES_SHOWN),
            ...(github.unreadable && Object.keys(github.unreadable).length > 0 ? { unreadable: Object.keys(github.unreadable).sort() } : {}),
          },
        }
      : {}),
  };
}

export async function providerSweep(client: Client, provider: string, runsShown: number): Promise<ProviderSweep> {
  return { provider, ...(await scheduleView(client, sweepScheduleId(provider), runsShown, summariseSweep)) };
}

export type SweepTrigger = { triggered: true; scheduleId: string; paused: boolean } | { triggered: false; scheduleId: string };

/**
 * Runs the provider's sweep now. Through its schedule, not as a workflow of its own: only a
 * run the schedule starts is handed the last run's report, and with it where the look for
 * lost jobs stopped. A sweep already running is left to finish; this one follows it.
 */
export async function sweepNow(client: Client, provider: string): Promise<SweepTrigger> {
  const scheduleId = sweepScheduleId(provider);
  const schedule = client.schedule.getHandle(scheduleId);
  try {
    const { state } = await schedule.describe();
    await schedule.trigger(ScheduleOverlapPolicy.BUFFER_ONE);
    return { triggered: true, scheduleId, paused: state.paused };
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) return { triggered: false, scheduleId };
    throw err;
  }
}
