/**
 * The orphan sweep as operators follow it: each provider's schedule
 * (`sweep/<provider>`), when it runs next, and what its last runs found;
 * and "sweep now", which goes through that schedule.
 */
import { ApplicationFailure, ScheduleNotFoundError, ScheduleOverlapPolicy, WorkflowFailedError, type Client } from '@temporalio/client';
import type { SweepReport } from '../../activities/sweep-activities';
import { sweepScheduleId } from '../../worker/sweep-schedule';

export interface SweepRun {
  workflowId: string;
  runId: string;
  scheduledAt: string;
  status: string;
  closedAt?: string;
  /** Counts from the run's report, when it completed. */
  result?: { listed: number; owned: number; deleted: number; skipped: number; failed: number; deletedNames: string[]; failures: { name: string; error: string }[] };
  error?: string;
}

export interface ProviderSweep {
  provider: string;
  scheduleId: string;
  scheduled: boolean;
  paused?: boolean;
  note?: string;
  intervalMs?: number;
  nextRunAt?: string;
  runs: SweepRun[];
}

/** A few names are enough to recognise a run; the full report is in the Web UI. */
const NAMES_SHOWN = 10;

function summarise(report: SweepReport): SweepRun['result'] {
  return {
    listed: report.listed,
    owned: report.owned,
    deleted: report.deleted.length,
    skipped: report.skipped.length,
    failed: report.failed.length,
    deletedNames: report.deleted.slice(0, NAMES_SHOWN).map((d) => d.name),
    failures: report.failed.slice(0, NAMES_SHOWN),
  };
}

/**
 * The message that says what went wrong. A failed activity fails the workflow with
 * "Activity task failed" wrapped around the reason; an operator needs the reason.
 */
function failureReason(err: Error): string {
  let reason: Error = err;
  while (reason.cause instanceof Error) reason = reason.cause;
  return reason === err ? err.message : `${reason.message}${reason instanceof ApplicationFailure && reason.type ? ` (${reason.type})` : ''}`;
}

async function sweepRun(client: Client, workflowId: string, runId: string, scheduledAt: Date): Promise<SweepRun> {
  const run: SweepRun = { workflowId, runId, scheduledAt: scheduledAt.toISOString(), status: 'unknown' };
  const handle = client.workflow.getHandle(workflowId, runId);
  const description = await handle.describe();
  run.status = description.status.name.toLowerCase();
  if (description.closeTime) run.closedAt = description.closeTime.toISOString();
  if (description.status.name === 'COMPLETED') {
    run.result = summarise((await handle.result()) as SweepReport);
  } else if (description.status.name === 'FAILED') {
    try {
      await handle.result();
    } catch (err) {
      run.error = err instanceof WorkflowFailedError ? failureReason(err) : (err as Error).message;
    }
  }
  return run;
}

export async function providerSweep(client: Client, provider: string, runsShown: number): Promise<ProviderSweep> {
  const scheduleId = sweepScheduleId(provider);
  let description;
  try {
    description = await client.schedule.getHandle(scheduleId).describe();
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) return { provider, scheduleId, scheduled: false, runs: [] };
    throw err;
  }
  const actions = description.info.recentActions.slice(-runsShown).reverse();
  const runs = await Promise.all(
    actions.map((a) =>
      sweepRun(client, a.action.workflow.workflowId, a.action.workflow.firstExecutionRunId, a.scheduledAt).catch(
        (err: unknown): SweepRun => ({
          workflowId: a.action.workflow.workflowId,
          runId: a.action.workflow.firstExecutionRunId,
          scheduledAt: a.scheduledAt.toISOString(),
          status: 'unknown',
          error: (err as Error).message,
        }),
      ),
    ),
  );
  const next = description.info.nextActionTimes[0];
  return {
    provider,
    scheduleId,
    scheduled: true,
    paused: description.state.paused,
    ...(description.state.note ? { note: description.state.note } : {}),
    ...(description.spec.intervals?.[0] ? { intervalMs: Number(description.spec.intervals[0].every) } : {}),
    ...(next && !description.state.paused ? { nextRunAt: next.toISOString() } : {}),
    runs,
  };
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
