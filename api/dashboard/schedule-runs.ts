/**
 * A schedule as operators follow it: paused or not (and why), its interval, when it runs
 * next, and what its last runs did. Each kind of run says what of its result to show.
 */
import { ApplicationFailure, ScheduleNotFoundError, WorkflowFailedError, type Client } from '@temporalio/client';

export interface ScheduledRun<R> {
  workflowId: string;
  runId: string;
  scheduledAt: string;
  status: string;
  closedAt?: string;
  /** What the run's result says, when it completed. */
  result?: R;
  error?: string;
}

export interface ScheduleView<R> {
  scheduleId: string;
  /** False until a worker has created the schedule. */
  scheduled: boolean;
  paused?: boolean;
  note?: string;
  intervalMs?: number;
  nextRunAt?: string;
  runs: ScheduledRun<R>[];
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

async function scheduledRun<Report, R>(client: Client, workflowId: string, runId: string, scheduledAt: Date, summarise: (report: Report) => R): Promise<ScheduledRun<R>> {
  const run: ScheduledRun<R> = { workflowId, runId, scheduledAt: scheduledAt.toISOString(), status: 'unknown' };
  const handle = client.workflow.getHandle(workflowId, runId);
  const description = await handle.describe();
  run.status = description.status.name.toLowerCase();
  if (description.closeTime) run.closedAt = description.closeTime.toISOString();
  if (description.status.name === 'COMPLETED') {
    run.result = summarise((await handle.result()) as Report);
  } else if (description.status.name === 'FAILED') {
    try {
      await handle.result();
    } catch (err) {
      run.error = err instanceof WorkflowFailedError ? failureReason(err) : (err as Error).message;
    }
  }
  return run;
}

/** The schedule and its last `runsShown` runs, newest first. */
export async function scheduleView<Report, R>(client: Client, scheduleId: string, runsShown: number, summarise: (report: Report) => R): Promise<ScheduleView<R>> {
  let description;
  try {
    description = await client.schedule.getHandle(scheduleId).describe();
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) return { scheduleId, scheduled: false, runs: [] };
    throw err;
  }
  const actions = description.info.recentActions.slice(-runsShown).reverse();
  const runs = await Promise.all(
    actions.map((a) =>
      scheduledRun(client, a.action.workflow.workflowId, a.action.workflow.firstExecutionRunId, a.scheduledAt, summarise).catch(
        (err: unknown): ScheduledRun<R> => ({
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
    scheduleId,
    scheduled: true,
    paused: description.state.paused,
    ...(description.state.note ? { note: description.state.note } : {}),
    ...(description.spec.intervals?.[0] ? { intervalMs: Number(description.spec.intervals[0].every) } : {}),
    ...(next && !description.state.paused ? { nextRunAt: next.toISOString() } : {}),
    runs,
  };
}
