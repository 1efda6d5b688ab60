/**
 * One Temporal Schedule per configured provider runs the orphan sweep. Schedules
 * live in Temporal, not in a worker, so any number of workers can start and each
 * one only makes sure the schedules match the config.
 */
import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  type Client,
  type ScheduleDescription,
  type ScheduleHandle,
} from '@temporalio/client';
import type { SweepArgs } from '../activities/sweep-activities';
import type { RunnerflowConfig } from '../config/schema';
import { PROVIDER_SWEEP_WORKFLOW } from '../workflows/provider-sweep';

export type SweepScheduleChange = 'created' | 'updated' | 'unchanged' | 'paused';

export interface SweepScheduleResult {
  provider: string;
  scheduleId: string;
  change: SweepScheduleChange;
}

/** Also the id of every workflow the schedule starts (Temporal appends the start time). */
export const sweepScheduleId = (provider: string): string => `sweep/${provider}`;

interface Wanted {
  scheduleId: string;
  intervalMs: number;
  args: SweepArgs;
  taskQueue: string;
}

/**
 * Creates missing sweep schedules and updates those whose interval, grace period or task queue changed.
 * With the sweep disabled, existing schedules are paused (not deleted: their run history stays visible).
 */
export async function ensureSweepSchedules(client: Client, config: RunnerflowConfig, taskQueue: string): Promise<SweepScheduleResult[]> {
  if (!config.sweep.enabled) return pauseSchedules(client, config.providers.map((p) => p.name));
  const results: SweepScheduleResult[] = [];
  for (const { name } of config.providers) {
    const wanted: Wanted = {
      scheduleId: sweepScheduleId(name),
      intervalMs: config.sweep.interval,
      args: { provider: name, gracePeriodMs: config.sweep.gracePeriod },
      taskQueue,
    };
    results.push({ provider: name, scheduleId: wanted.scheduleId, change: await ensureSchedule(client, wanted) });
  }
  return results;
}

async function ensureSchedule(client: Client, wanted: Wanted): Promise<SweepScheduleChange> {
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
  if (paused) await handle.unpause('sweep enabled in the config');
  if (matches(current, wanted)) return paused ? 'updated' : 'unchanged';
  await handle.update((previous) => ({ ...previous, spec: specOf(wanted), policies: { ...previous.policies, ...policiesOf() }, action: actionOf(wanted) }));
  return 'updated';
}

async function pauseSchedules(client: Client, providers: string[]): Promise<SweepScheduleResult[]> {
  const results: SweepScheduleResult[] = [];
  for (const provider of providers) {
    const handle = client.schedule.getHandle(sweepScheduleId(provider));
    const current = await describeOrUndefined(handle);
    if (!current || current.state.paused) continue;
    await handle.pause('sweep disabled in the config');
    results.push({ provider, scheduleId: sweepScheduleId(provider), change: 'paused' });
  }
  return results;
}

async function describeOrUndefined(handle: ScheduleHandle): Promise<ScheduleDescription | undefined> {
  try {
    return await handle.describe();
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) return undefined;
    throw err;
  }
}

const specOf = (wanted: Wanted) => ({ intervals: [{ every: wanted.intervalMs }] });
// SKIP: a sweep still deleting when the next one is due must not run twice against the provider.
const policiesOf = () => ({ overlap: ScheduleOverlapPolicy.SKIP });
const actionOf = (wanted: Wanted) => ({
  type: 'startWorkflow' as const,
  workflowType: PROVIDER_SWEEP_WORKFLOW,
  workflowId: wanted.scheduleId,
  taskQueue: wanted.taskQueue,
  args: [wanted.args],
});

function matches(current: ScheduleDescription, wanted: Wanted): boolean {
  const [interval, ...moreIntervals] = current.spec.intervals ?? [];
  const action = current.action;
  const [args] = (action.args ?? []) as Partial<SweepArgs>[];
  return (
    moreIntervals.length === 0 &&
    interval?.every === wanted.intervalMs &&
    (current.spec.calendars ?? []).length === 0 &&
    current.policies.overlap === ScheduleOverlapPolicy.SKIP &&
    action.workflowType === PROVIDER_SWEEP_WORKFLOW &&
    action.workflowId === wanted.scheduleId &&
    action.taskQueue === wanted.taskQueue &&
    args?.provider === wanted.args.provider &&
    args?.gracePeriodMs === wanted.args.gracePeriodMs
  );
}
