/**
 * Temporal Schedules that runnerflow keeps in step with its config (the orphan
 * sweep, the liveness checks). Schedules live in Temporal, not in a worker, so any
 * number of workers can start and each one only makes sure they match the config.
 */
import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  type Client,
  type ScheduleDescription,
  type ScheduleHandle,
} from '@temporalio/client';

export type ScheduleChange = 'created' | 'updated' | 'unchanged' | 'paused';

export interface WantedSchedule {
  /** Also the id of every workflow the schedule starts (Temporal appends the start time). */
  scheduleId: string;
  intervalMs: number;
  /** Each run starts up to this much later than its slot, so many schedules do not fire in lockstep. */
  jitterMs?: number;
  workflowType: string;
  args: unknown[];
  taskQueue: string;
}

/** Creates the schedule, or updates it when its interval, jitter, workflow, arguments or task queue changed; unpauses it. */
export async function ensureSchedule(client: Client, wanted: WantedSchedule): Promise<ScheduleChange> {
  const handle = client.schedule.getHandle(wanted.scheduleId);
  let current = await describeOrUndefined(handle);
  if (!current) {
    try {
      await client.schedule.create({ scheduleId: wanted.scheduleId, spec: specOf(wanted), policies: policiesOf(), action: actionOf(wanted) });
      return 'created';
    } catch (err) {
      // Another worker starting at the same time created it first: compare with theirs.
      if (!(err instanceof ScheduleAlreadyRunning)) throw err;
      current = await handle.describe();
    }
  }
  const paused = current.state.paused;
  if (paused) await handle.unpause('enabled in the config');
  if (matches(current, wanted)) return paused ? 'updated' : 'unchanged';
  await handle.update((previous) => ({ ...previous, spec: specOf(wanted), policies: { ...previous.policies, ...policiesOf() }, action: actionOf(wanted) }));
  return 'updated';
}

/** Pauses rather than deletes: the run history of a disabled schedule stays visible. False when there was nothing to pause. */
export async function pauseSchedule(client: Client, scheduleId: string, note: string): Promise<boolean> {
  const handle = client.schedule.getHandle(scheduleId);
  const current = await describeOrUndefined(handle);
  if (!current || current.state.paused) return false;
  await handle.pause(note);
  return true;
}

async function describeOrUndefined(handle: ScheduleHandle): Promise<ScheduleDescription | undefined> {
  try {
    return await handle.describe();
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) return undefined;
    throw err;
  }
}

const specOf = (wanted: WantedSchedule) => ({ intervals: [{ every: wanted.intervalMs }], jitter: wanted.jitterMs ?? 0 });
// SKIP: a run still busy when the next one is due must not run twice against the provider.
const policiesOf = () => ({ overlap: ScheduleOverlapPolicy.SKIP });
const actionOf = (wanted: WantedSchedule) => ({
  type: 'startWorkflow' as const,
  workflowType: wanted.workflowType,
  workflowId: wanted.scheduleId,
  taskQueue: wanted.taskQueue,
  args: wanted.args,
});

function matches(current: ScheduleDescription, wanted: WantedSchedule): boolean {
  const [interval, ...moreIntervals] = current.spec.intervals ?? [];
  const action = current.action;
  return (
    moreIntervals.length === 0 &&
    interval?.every === wanted.intervalMs &&
    (current.spec.jitter ?? 0) === (wanted.jitterMs ?? 0) &&
    (current.spec.calendars ?? []).length === 0 &&
    current.policies.overlap === ScheduleOverlapPolicy.SKIP &&
    action.workflowType === wanted.workflowType &&
    action.workflowId === wanted.scheduleId &&
    action.taskQueue === wanted.taskQueue &&
    JSON.stringify(action.args ?? []) === JSON.stringify(wanted.args)
  );
}
