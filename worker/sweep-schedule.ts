/**
 * One Temporal Schedule per configured provider runs the orphan sweep.
 */
import type { Client } from '@temporalio/client';
import type { SweepArgs } from '../activities/sweep-activities';
import type { RunnerflowConfig } from '../config/schema';
import { PROVIDER_SWEEP_WORKFLOW } from '../workflows/provider-sweep';
import { ensureSchedule, pauseSchedule, type ScheduleChange } from './schedules';

export type SweepScheduleChange = ScheduleChange;

export interface SweepScheduleResult {
  provider: string;
  scheduleId: string;
  change: SweepScheduleChange;
}

/** Also the id of every workflow the schedule starts (Temporal appends the start time). */
export const sweepScheduleId = (provider: string): string => `sweep/${provider}`;

/**
 * Creates missing sweep schedules and updates those whose interval, grace period or task queue changed.
 * With the sweep disabled, existing schedules are paused (not deleted: their run history stays visible).
 */
export async function ensureSweepSchedules(client: Client, config: RunnerflowConfig, taskQueue: string): Promise<SweepScheduleResult[]> {
  const results: SweepScheduleResult[] = [];
  for (const { name } of config.providers) {
    const scheduleId = sweepScheduleId(name);
    if (!config.sweep.enabled) {
      if (await pauseSchedule(client, scheduleId, 'sweep disabled in the config')) results.push({ provider: name, scheduleId, change: 'paused' });
      continue;
    }
    const { githubRunners, lostJobAge, lostJobRepositories, lostJobRound } = config.sweep;
    const args: SweepArgs = {
      provider: name,
      gracePeriodMs: config.sweep.gracePeriod,
      intervalMs: config.sweep.interval,
      ...(githubRunners ? { githubRunners: true, ...(lostJobAge > 0 ? { lostJobAgeMs: lostJobAge, lostJobRepositories, lostJobRound } : {}) } : {}),
    };
    const change = await ensureSchedule(client, { scheduleId, intervalMs: config.sweep.interval, workflowType: PROVIDER_SWEEP_WORKFLOW, args: [args], taskQueue });
    results.push({ provider: name, scheduleId, change });
  }
  return results;
}
